#!/usr/bin/env bash
# Runs upstream's [Conformance] tests of "[sig-network] Services" and
# "[sig-network] DNS" (k8s.io/kubernetes v1.37.2, test/e2e/network) against a
# fresh `ccmlab serve --nodes 2` and prints what ran, passed and failed.
# Usage: conformance/run.sh [extra ginkgo focus regexp]; `make conformance`.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FOCUS=${1:-'\[sig-network\] (Services|DNS) .*\[Conformance\]'}
out=${CONFORMANCE_OUT:-artifacts/conformance}
mkdir -p "$out" bin
"$GO" test -tags conformance -c -o bin/conformance.test ./conformance
data=$(mktemp -d)
bin/ccmlab serve --nodes 2 --data-dir "$data/lab" --listen 127.0.0.1:0 >"$out/serve.log" 2>&1 &
lab=$!
trap 'kill $lab 2>/dev/null; wait $lab 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 1 150); do
	grep -q "ccmlab is ready" "$out/serve.log" && break
	kill -0 $lab 2>/dev/null || { cat "$out/serve.log"; echo "conformance: the lab exited" >&2; exit 1; }
	sleep 1
done
grep -q "ccmlab is ready" "$out/serve.log" || { echo "conformance: the lab was not ready in 150 s" >&2; exit 1; }
set +e
bin/conformance.test -kubeconfig="$data/lab/kubeconfig" -provider=skeleton \
	-ginkgo.focus="$FOCUS" -ginkgo.no-color -ginkgo.timeout=2h \
	-ginkgo.junit-report="$PWD/$out/junit.xml" -report-dir="$out" >"$out/e2e.log" 2>&1
rc=$?
set -e
grep -E '^Ran [0-9]+ of|Passed \| |^\s+\[FAIL\]' "$out/e2e.log" || tail -20 "$out/e2e.log"
echo "conformance: full log in $out/e2e.log (the lab's in $out/serve.log)"
exit $rc
