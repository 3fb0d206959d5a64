#!/usr/bin/env bash
# tests/timed.sh FILE NAME COMMAND...: run COMMAND, add "NAME: N s" to FILE (make test prints
# the file at its end: the wall time of each phase), exit with COMMAND's status.
file=$1 name=$2
shift 2
start=$(date +%s)
"$@"
rc=$?
took=$(( $(date +%s) - start ))
if [ "$rc" = 0 ]; then note=""; else note="  (exit status $rc)"; fi
printf '  %-10s %6d s%s\n' "$name" "$took" "$note" >> "$file"
exit "$rc"
