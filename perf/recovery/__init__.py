"""Publishing and consuming through a proxy that cuts connections (``python -m perf.recovery``)."""
