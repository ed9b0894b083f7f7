#!/usr/bin/env bash
# make test: every check, each phase timed. The table of phases, then the
# e2e tests by duration, is printed at the end (whether the run passed or
# not) and kept in _output/test-timings.txt; the e2e output in
# _output/e2e.log.
#
# E2E_PARALLEL bounds how many e2e tests run at once (go test -parallel):
# the tests that need the operator to themselves run first, one at a time,
# then the others together.
#
# Two lanes run side by side once the quick checks pass: the local
# cluster, the images and the e2e in one (its output in
# _output/cluster-and-e2e.log, shown once the other lane is done), the
# release test, unit tests and envtest in the other. The e2e starts with
# the serial tests, one at a time, which leave a core idle: the other lane
# takes it. Every phase runs whatever another one did; the run fails if
# any phase failed.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p _output
timings=_output/test-timings.txt
e2elog=_output/e2e.log
: > "$timings"
: > "$e2elog" # a run that stops before the e2e lists no e2e results of an earlier one
start=$SECONDS
failures=_output/test-failures
: > "$failures"

report() {
  {
    echo
    echo "make test: phases (seconds; the two lanes overlap, see hack/test.sh)"
    cat "$timings"
    printf '%-24s %6d\n' "total" $((SECONDS - start))
    if [ -s "$e2elog" ]; then
      echo
      echo "e2e tests and features by duration (seconds; parallel ones overlap)"
      # Top-level tests and their first level of subtests, longest first.
      sed -nE 's/^( {0,4})--- (PASS|FAIL|SKIP): ([^ ]+) \(([0-9.]+)s\)$/\4 \2 \1\3/p' "$e2elog" |
        sort -rn | awk '{ printf "%8.1f  %-4s %s\n", $1, $2, substr($0, index($0, $3)) }'
    fi
  } | tee "$timings.tmp"
  mv "$timings.tmp" "$timings"
  if [ -s "$failures" ]; then
    echo "make test: failed in $(paste -sd, "$failures")"
  fi
}
trap report EXIT

# phase NAME CMD...: runs CMD and records how long it took; a failure is
# recorded and ends the lane it runs in.
phase() {
  local name=$1 t0=$SECONDS
  shift
  echo "=== phase $name"
  "$@"
  local rc=$?
  printf '%-24s %6d%s\n' "$name" $((SECONDS - t0)) "$([ $rc = 0 ] || echo "  FAILED (exit $rc)")" >> "$timings"
  if [ $rc != 0 ]; then
    echo "$name" >> "$failures"
    exit $rc
  fi
}

make=(make --no-print-directory)
# The quick checks, and what both lanes need.
phase generated "${make[@]}" verify-generated
phase vet "${make[@]}" vet
phase rules "${make[@]}" rules
phase helm "${make[@]}" helm
phase s3-server "${make[@]}" s3-server
phase envtest-assets "${make[@]}" envtest-assets

lanelog=_output/cluster-and-e2e.log
(
  phase cluster-up "${make[@]}" cluster-up
  phase images "${make[@]}" images
  phase cert-manager-up "${make[@]}" cert-manager-up
  phase e2e bash -c 'set -o pipefail; KUBECONFIG="$PWD/_output/cluster/kubeconfig" go test -count=1 -tags e2e -timeout 50m \
    -parallel "${E2E_PARALLEL:-4}" -v ./test/e2e/... 2>&1 | tee "$0"' "$e2elog"
) > "$lanelog" 2>&1 &
e2elane=$!
echo "=== cluster, images and e2e run beside the next phases; their output: $lanelog"

(
  phase release-test "${make[@]}" release-test
  phase unit+envtest env RAFTSMAN_VERSITYGW="$(bash hack/s3/versitygw.sh build)" \
    KUBEBUILDER_ASSETS="$PWD/_output/envtest" go test -count=1 -timeout 15m ./...
)

echo "=== cluster, images and e2e (from $lanelog)"
tail -n +1 -f --pid="$e2elane" "$lanelog"
wait "$e2elane"
[ ! -s "$failures" ]
