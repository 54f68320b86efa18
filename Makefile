# Convenience targets; each one is a script in scripts/ that also works
# without make (a fresh Debian 12 machine has no make).
.PHONY: setup demo test unit lint brokers brokers-stop perf-codec perf-report doc wheel clean

setup:
	scripts/setup.sh

demo:
	scripts/demo.sh

test:
	scripts/test.sh

unit: setup
	.venv/bin/python -m pytest tests/unit

lint: setup
	scripts/lint.sh

brokers:
	scripts/brokers.sh start all

brokers-stop:
	scripts/brokers.sh stop all

perf-codec: setup
	.venv/bin/pip install -q --group perf
	.venv/bin/python -m perf.codec

clean:
	rm -rf build dist *.egg-info
	find rbfly -name '*.so' -o -name '*.c' -o -name '*.html' | xargs rm -f

doc: setup
	scripts/docs.sh

wheel: setup
	scripts/wheel.sh

perf-report:
	scripts/perf-report.sh $(PERF_OPTIONS)
