# Ambar — make targets
#   make test   the whole test suite (installs what it needs on a fresh machine)
#   make run    the workbench's default scenarios (not built yet: see README)
#   make build  debug build of every target

SWIFT ?= swift
APT_PACKAGES := libsqlite3-dev pkg-config

.PHONY: test run build deps clean

deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

run: deps
	@echo "make run: the workbench has not landed yet (issue 6). Use 'make test' for now."
	@exit 0

clean:
	rm -rf .build
