#!/bin/sh
# tools/check-exports.sh LIB HEADER - fail when the shared library's exported
# functions differ from the functions declared in the public header.
set -eu
lib=$1 hdr=$2
want=$(grep -oE '^(int|unsigned|ssize_t|int64_t|uint64_t|void|bool|const char|weir_[a-z0-9_]+_t) \*?weir_[a-z0-9_]+\(' "$hdr" |
	sed -E 's/.*(weir_[a-z0-9_]+)\(/\1/' | sort -u)
have=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sed 's/@.*//' | sort -u)
if [ "$want" != "$have" ]; then
	echo "check-exports: $lib exports differ from $hdr:" >&2
	diff -u "$(printf '%s\n' "$want" > /tmp/.want.$$; echo /tmp/.want.$$)" \
		"$(printf '%s\n' "$have" > /tmp/.have.$$; echo /tmp/.have.$$)" >&2 || true
	rm -f /tmp/.want.$$ /tmp/.have.$$
	exit 1
fi
