#!/usr/bin/env sh
# The operator CLI as a package bin; runs through npm so that the pinned Node 22 is used.
dir=$(CDPATH= cd -- "$(dirname -- "$(readlink -f "$0")")/.." && pwd)
exec npm --prefix "$dir" run --silent cli -- "$@"
