#!/usr/bin/env bash
# make test: every check, each phase timed. The table of phases, then the
# e2e tests by duration, is printed at the end (whether the run passed or
# not) and kept in _output/test-timings.txt; the e2e output in
# _output/e2e.log.
#
# E2E_PARALLEL bounds how many e2e tests run at once (go test -parallel):
# the tests that need the operator to themselves run first, one at a time,
# then the others together.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p _output
timings=_output/test-timings.txt
e2elog=_output/e2e.log
: > "$timings"
: > "$e2elog" # a run that stops before the e2e lists no e2e results of an earlier one
start=$SECONDS
failed=""

report() {
  {
    echo
    echo "make test: phases (seconds)"
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
  [ -z "$failed" ] || echo "make test: failed in $failed"
}
trap report EXIT

# phase NAME CMD...: runs CMD, records how long it took; the first failure
# ends the run.
phase() {
  local name=$1 t0=$SECONDS
  shift
  echo "=== phase $name"
  "$@"
  local rc=$?
  printf '%-24s %6d%s\n' "$name" $((SECONDS - t0)) "$([ $rc = 0 ] || echo "  FAILED (exit $rc)")" >> "$timings"
  if [ $rc != 0 ]; then
    failed=$name
    exit $rc
  fi
}

make=(make --no-print-directory)
phase generated "${make[@]}" verify-generated
phase vet "${make[@]}" vet
phase rules "${make[@]}" rules
phase helm "${make[@]}" helm
phase release-test "${make[@]}" release-test
phase envtest-assets "${make[@]}" envtest-assets
phase s3-server "${make[@]}" s3-server
phase unit+envtest env RAFTSMAN_VERSITYGW="$(bash hack/s3/versitygw.sh build)" \
  KUBEBUILDER_ASSETS="$PWD/_output/envtest" go test -count=1 -timeout 15m ./...
phase cluster-up "${make[@]}" cluster-up
phase images "${make[@]}" images
phase cert-manager-up "${make[@]}" cert-manager-up
: > "$e2elog"
phase e2e bash -c 'set -o pipefail; KUBECONFIG="$PWD/_output/cluster/kubeconfig" go test -count=1 -tags e2e -timeout 50m \
  -parallel "${E2E_PARALLEL:-4}" -v ./test/e2e/... 2>&1 | tee "$0"' "$e2elog"
