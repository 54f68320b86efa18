# The module has a C API only (see _buffer.pxd).
