#!/usr/bin/env bash
# run.sh — kubeproof's fuzzing campaign: every fuzz target of ./fuzz and
# of the packages that keep one next to their code, in turn, each for
# FUZZTIME, with progress lines and a summary table.
#
#   fuzz/run.sh                        # every target, 10 minutes each
#   FUZZTIME=2m fuzz/run.sh            # shorter
#   fuzz/run.sh FuzzHTTP FuzzAdmission # only these targets
#   FUZZPKGS=./impl/apiserver/endpoints fuzz/run.sh   # only this package's targets
#
# Environment: FUZZTIME (default 10m), FUZZPARALLEL (workers, default 2),
# PROGRESS_EVERY (seconds between progress lines, default 30), GO (go),
# FUZZPKGS (the packages holding targets; PKG is accepted for one).
#
# Progress lines give go test's counts: "new interesting" this campaign and
# "total interesting", the whole corpus it fuzzes from (seeds and its fuzz
# cache, where the kept corpus was put back). The summary's "kept corpus" is
# the number of inputs in fuzz/testdata/corpus/<Target>/ after the campaign.
#
# Corpora: the inputs a campaign found interesting are kept in
# fuzz/testdata/corpus/<Target>/ (for every package: target names are
# unique in the module) and put back into Go's fuzz cache before
# the next campaign, so campaigns build on each other. They are not replayed
# by plain `go test` (thousands of HTTP requests would make CI slow).
#
# Findings: go test minimizes a failing input and writes it to
# <package>/testdata/fuzz/<Target>/<hash>, where plain `go test <package>`
# replays it from then on: commit it with the fix as a regression test.
# The summary lists every finding file.
set -u -o pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10m}
FUZZPARALLEL=${FUZZPARALLEL:-2}
PROGRESS_EVERY=${PROGRESS_EVERY:-30}
FUZZPKGS=${FUZZPKGS:-${PKG:-./fuzz ./impl/apiserver/admission ./impl/apiserver/endpoints ./cmd/kubeproof}}
CORPUS=fuzz/testdata/corpus

# Every target and the package it is in.
declare -A pkgOf
all=()
for p in $FUZZPKGS; do
	p=./${p#./}
	p=${p%/}
	for t in $($GO test -list '^Fuzz' "$p" | grep '^Fuzz'); do
		pkgOf[$t]=$p
		all+=("$t")
	done
done
if [ $# -gt 0 ]; then
	targets=("$@")
	for t in "${targets[@]}"; do
		if [ -z "${pkgOf[$t]:-}" ]; then
			echo "run.sh: no fuzz target $t in $FUZZPKGS" >&2
			exit 2
		fi
	done
else
	targets=("${all[@]}")
fi
if [ ${#targets[@]} -eq 0 ]; then
	echo "run.sh: no fuzz targets found in $FUZZPKGS" >&2
	exit 2
fi
# seconds converts go's durations (1h2m3s, 45s) to seconds.
seconds() {
	local d=$1 total=0 n
	while [[ $d =~ ^([0-9]+)([hms])(.*)$ ]]; do
		n=${BASH_REMATCH[1]}
		case ${BASH_REMATCH[2]} in
		h) total=$((total + n * 3600)) ;;
		m) total=$((total + n * 60)) ;;
		s) total=$((total + n)) ;;
		esac
		d=${BASH_REMATCH[3]}
	done
	echo $total
}

gocache=$($GO env GOCACHE)
logdir=$(mktemp -d "${TMPDIR:-/tmp}/kubeproof-fuzz.XXXXXX")
summary=()
failed=0

echo "fuzzing ${#targets[@]} targets for $FUZZTIME each, $FUZZPARALLEL workers; logs in $logdir"
for t in "${targets[@]}"; do
	PKG=${pkgOf[$t]}
	FINDINGS=${PKG#./}/testdata/fuzz
	cache=$gocache/fuzz/$($GO list "$PKG")
	# Resume from the kept corpus.
	if [ -d "$CORPUS/$t" ]; then
		mkdir -p "$cache/$t"
		cp -n "$CORPUS/$t"/* "$cache/$t"/ 2>/dev/null || true
	fi
	before=$(ls "$FINDINGS/$t" 2>/dev/null | sort)
	tmpBefore=$(ls -d "${TMPDIR:-/tmp}"/kubeproof-fuzz-* 2>/dev/null | sort)
	log="$logdir/$t.log"
	start=$(date +%s)
	last=0
	execs=0 rate=0 newint=0 total=0 elapsed=0s
	$GO test -vet=off -run='^$' -fuzz="^$t\$" -fuzztime="$FUZZTIME" -parallel="$FUZZPARALLEL" "$PKG" >"$log" 2>&1 &
	pid=$!
	while IFS= read -r line; do
		# fuzz: elapsed: 33s, execs: 12345 (411/sec), new interesting: 3 (total: 111)
		if [[ $line =~ elapsed:\ ([0-9hms]+),\ execs:\ ([0-9]+)\ \(([0-9]+)/sec\),\ new\ interesting:\ ([0-9]+)\ \(total:\ ([0-9]+)\) ]]; then
			elapsed=${BASH_REMATCH[1]} execs=${BASH_REMATCH[2]} rate=${BASH_REMATCH[3]}
			newint=${BASH_REMATCH[4]} total=${BASH_REMATCH[5]}
			now=$(date +%s)
			if [ $((now - last)) -ge "$PROGRESS_EVERY" ]; then
				last=$now
				printf '%-20s elapsed %-7s execs %-10s %6s/s  new interesting %-5s total interesting %-6s findings 0\n' \
					"$t" "$elapsed" "$execs" "$rate" "$newint" "$total"
			fi
		elif [[ $line =~ elapsed:\ ([0-9hms]+),\ gathering\ baseline\ coverage:\ ([0-9]+/[0-9]+) ]]; then
			now=$(date +%s)
			if [ $((now - last)) -ge "$PROGRESS_EVERY" ]; then
				last=$now
				printf '%-20s elapsed %-7s gathering baseline coverage %s\n' "$t" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
			fi
		elif [[ $line == *"Failing input written to"* ]]; then
			printf '%-20s FINDING: %s\n' "$t" "${line#*Failing input written to }"
		fi
	done < <(tail -n +1 -F --pid=$pid "$log" 2>/dev/null)
	wait $pid
	rc=$?
	took=$(($(date +%s) - start))
	# Fuzz workers are stopped without running TestMain's cleanup: remove
	# the etcd data directories of the API servers this target started.
	tmpAfter=$(ls -d "${TMPDIR:-/tmp}"/kubeproof-fuzz-* 2>/dev/null | sort)
	for d in $(comm -13 <(echo "$tmpBefore") <(echo "$tmpAfter")); do
		rm -rf "$d"
	done
	after=$(ls "$FINDINGS/$t" 2>/dev/null | sort)
	new=$(comm -13 <(echo "$before") <(echo "$after") | grep -v '^$' || true)
	nfind=$(echo -n "$new" | grep -c . || true)
	result=ok
	if [ $rc -ne 0 ]; then
		result=FAIL
		failed=1
		if [ "$nfind" -eq 0 ]; then
			result="FAIL (no input; see $log)"
		fi
	fi
	# Keep what the campaign found interesting.
	if [ -d "$cache/$t" ]; then
		mkdir -p "$CORPUS/$t"
		cp -n "$cache/$t"/* "$CORPUS/$t"/ 2>/dev/null || true
	fi
	kept=$(ls "$CORPUS/$t" 2>/dev/null | wc -l)
	printf '%-20s done in %ss: %s execs, %s new interesting, %s findings, %s\n' "$t" "$took" "$execs" "$newint" "$nfind" "$result"
	for f in $new; do
		echo "    finding: $FINDINGS/$t/$f (re-run: go test -run=$t/$f $PKG)"
	done
	secs=$(seconds "$elapsed")
	avg=0
	if [ "$secs" -gt 0 ]; then avg=$((execs / secs)); fi
	summary+=("$(printf '| %-18s | %7s | %10s | %7s | %15s | %11s | %8s | %s |' "$t" "$elapsed" "$execs" "$avg" "$newint" "$kept" "$nfind" "$result")")
done

echo
echo "| target             | elapsed |      execs | execs/s | new interesting | kept corpus | findings | result |"
echo "|--------------------|---------|------------|---------|-----------------|-------------|----------|--------|"
printf '%s\n' "${summary[@]}"
exit $failed
