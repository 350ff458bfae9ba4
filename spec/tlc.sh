#!/bin/sh
# Run TLC on every bounded configuration spec/*.cfg (or those named in
# $TLC_CONFIGS) and print TLC's distinct-state count beside the Go model
# checker's count with symmetry off: the two must be equal.
#
#   TLA2TOOLS=/path/to/tla2tools.jar spec/tlc.sh
#
# Without TLA2TOOLS it says so and exits 0 (TLC is not installed on the
# project's CI machines; `make test` does not depend on it).
set -eu
cd "$(dirname "$0")"
if [ -z "${TLA2TOOLS:-}" ] || [ ! -f "${TLA2TOOLS}" ]; then
	echo "make tlc: TLA2TOOLS does not point at a tla2tools.jar; skipping TLC." >&2
	echo "  (download it from https://github.com/tlaplus/tlaplus/releases and run" >&2
	echo "   TLA2TOOLS=/path/to/tla2tools.jar make tlc)" >&2
	exit 0
fi
KUBEPROOF="${KUBEPROOF:-../bin/kubeproof}"
configs="${TLC_CONFIGS:-$(ls *.cfg | sed 's/\.cfg$//')}"
status=0
printf '%-16s %16s %16s  %s\n' configuration "TLC distinct" "Go distinct" result
for c in $configs; do
	out=$(java -XX:+UseParallelGC -cp "$TLA2TOOLS" tlc2.TLC -workers auto -config "$c.cfg" PodPipeline.tla 2>&1) || true
	tlc=$(printf '%s\n' "$out" | sed -n 's/.* \([0-9][0-9]*\) distinct states found.*/\1/p' | tail -1)
	if printf '%s\n' "$out" | grep -q "Error:"; then
		printf '%s\n' "$out" | sed -n '/Error:/,$p' | head -40 >&2
	fi
	go=$("$KUBEPROOF" model check --config "$c" --symmetry=false --quiet 2>/dev/null | awk -v c="$c" '$1 == c && $2 == "false" { print $3 }' | tail -1) || true
	result=ok
	if [ -z "$tlc" ] || [ "$tlc" != "$go" ]; then
		result=MISMATCH
		status=1
	fi
	printf '%-16s %16s %16s  %s\n' "$c" "${tlc:-?}" "${go:-?}" "$result"
done
exit $status
