// Command bench measures Raftsman on a real cluster against references taken
// in the same run on the same cluster, and writes the figures and their
// ratios to a Markdown file. It asserts nothing: machines are noisy.
//
//	go run ./test/bench -out bench/RESULTS.md   (make bench)
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/manifest"
	"github.com/raftsman/raftsman/internal/scrape"
)

var (
	out      = flag.String("out", "bench/RESULTS.md", "file the results are written to")
	install  = flag.String("install", "dist/install.yaml", "operator install manifest")
	reader   = flag.String("metrics-reader", "config/prometheus/metrics-reader.yaml", "the service account allowed to read the operator's /metrics (the operator's own may not)")
	version  = flag.String("etcd-version", "3.6.16", "etcd version")
	oldVer   = flag.String("etcd-old-version", "3.5.35", "etcd version a cluster is upgraded from to -etcd-version")
	runs     = flag.Int("runs", 3, "repetitions of each measurement; the median is reported")
	idleWait = flag.Duration("idle", time.Minute, "how long an idle cluster is watched for API writes")
	qRuns    = flag.Int("quorum-runs", 3, "runs (the first ones) that also measure the healing of a quorum loss, the longest failure")
	only     = flag.String("only", "", "sections to run, comma-separated ("+strings.Join(sectionNames, ", ")+"); empty runs every one. The results file then holds only their rows")
)

// The sections of a run, in the order they run.
const (
	secMembership = "membership"
	secRolling    = "rolling"
	secMigration  = "migration"
	secHealing    = "healing"
	secDefrag     = "defrag"
	secScaling    = "scaling"
	secResume     = "resume"
)

var sectionNames = []string{secMembership, secRolling, secMigration, secHealing, secDefrag, secScaling, secResume}

// sections are the sections a run measures.
type sections map[string]bool

// parseSections reads -only. The storage migration's reference is the
// learner step of the membership section, which it brings in.
func parseSections(list string) (sections, error) {
	set := sections{}
	if list == "" {
		for _, n := range sectionNames {
			set[n] = true
		}
		return set, nil
	}
	for n := range strings.SplitSeq(list, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(sectionNames, n) {
			return nil, fmt.Errorf("-only: no section %q (sections: %s)", n, strings.Join(sectionNames, ", "))
		}
		set[n] = true
	}
	if set[secMigration] {
		set[secMembership] = true
	}
	return set, nil
}

// all says whether every section runs.
func (s sections) all() bool { return len(s) == len(sectionNames) }

// references: every section but defragmentation compares with the
// reference Pod.
func (s sections) references() bool { return len(s) > 1 || !s[secDefrag] }

// onRoll: the sections run on the rolling changes' cluster.
func (s sections) onRoll() bool { return s[secRolling] || s[secMigration] || s[secHealing] }

// String lists the sections in the order they run.
func (s sections) String() string {
	var names []string
	for _, n := range sectionNames {
		if s[n] {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

type bench struct {
	c    client.WithWatch
	cs   kubernetes.Interface
	ctx  context.Context
	only sections
}

func main() {
	flag.Parse()
	secs, err := parseSections(*only)
	must(err)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	must(clientgoscheme.AddToScheme(scheme))
	must(etcdv1.AddToScheme(scheme))
	cfg := ctrl.GetConfigOrDie()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	must(err)
	cs, err := kubernetes.NewForConfig(cfg)
	must(err)
	b := &bench{c: c, cs: cs, ctx: ctx, only: secs}
	began := time.Now()
	must(b.installOperator())

	s := &samples{errs: map[string]int{}}
	for i := range *runs {
		b.run(i, s)
	}
	r := s.results()
	r.only = secs
	text := r.markdown()
	fmt.Print(text)
	fmt.Printf("bench took %s\n", time.Since(began).Round(time.Second))
	must(os.WriteFile(*out, []byte(text+keptScaleSection(*out)), 0o644))
}

// samples are what the runs measured, one entry per run (the quorum ones
// per run that measured a quorum loss), for the medians of the results.
type samples struct {
	podReady, podRestart, learnerRef, clusterReady, scaleStep, memberBack []float64
	migration                                                             []float64
	createWrites, idleWrites                                              float64
	createCounts                                                          writeCounts
	firstBack, firstDone, rollAll, upgradeTook, maxGap                    []float64
	tlsWaits                                                              int
	writes, failures                                                      int
	errs                                                                  map[string]int
	failedPod, failedSeen, failedAfter, replaced, emptied                 []float64
	quorum, quorumSeen                                                    []float64
	quorumAfter, forcingAfter, regrowingAfter                             []float64 // from the annotation
	restored, restoredAfter                                               []float64
	defragTook, defragReclaimed, defragStall, defragQuiet, defragOther    []float64
	defragClients                                                         int
	oneToThree, threeToFive, threeToSeven                                 []float64
	resumed, suspended                                                    []float64
}

// run is run i of every measurement (of every section -only names), in a
// namespace of its own.
func (b *bench) run(i int, s *samples) {
	ns := b.namespace()
	if b.only.references() {
		r, rr, l, err := b.reference(ns)
		must(err)
		s.podReady, s.podRestart, s.learnerRef = append(s.podReady, r), append(s.podRestart, rr), append(s.learnerRef, l)
		fmt.Printf("run %d: reference pod %.1fs restart %.1fs learner-ref %.1fs\n", i+1, r, rr, l)
	}
	if b.only[secMembership] {
		b.measureMembership(i, ns, s)
	}

	if b.only.onRoll() {
		// Rolling changes on a cluster of their own, with nothing else of
		// this run left running beside it (the reference ran alone too).
		must(b.clearNamespace(ns))
		if b.only[secRolling] {
			up, roll := b.measureRolling(ns, s)
			printRolling(i, up, roll)
		} else {
			_, err := b.createCluster(ns, "roll", 3)
			must(err)
		}
	}
	if b.only[secMigration] {
		// The same cluster moved to another StorageClass, settled first.
		time.Sleep(settle)
		mig, err := b.migrate(ns, "roll")
		must(err)
		s.migration = append(s.migration, mig)
		fmt.Printf("run %d: moved to another StorageClass in %.1fs\n", i+1, mig)
	}
	if b.only[secHealing] {
		// Healing on the same cluster, settled again after the rollout.
		time.Sleep(settle)
		h, err := b.heal(ns, "roll", i < *qRuns)
		must(err)
		s.addHealing(h)
		printHealing(i, h)
	}

	if b.only[secDefrag] {
		// Defragmentation on a cluster of its own, alone like the others.
		must(b.clearNamespace(ns))
		d, err := b.defrag(ns)
		must(err)
		s.addDefrag(d)
		printDefrag(i, d)
	}

	if b.only[secScaling] {
		// Scale-ups on clusters of their own, alone like the others.
		must(b.clearNamespace(ns))
		sc, err := b.scaleUps(ns)
		must(err)
		s.addScaling(sc)
		printScaling(i, sc)
	}

	if b.only[secResume] {
		must(b.clearNamespace(ns))
		res, err := b.suspendResume(ns, "pause")
		must(err)
		s.resumed, s.suspended = append(s.resumed, res.took), append(s.suspended, res.suspendTook)
		printResume(i, res)
	}

	must(b.c.Delete(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
}

// measureMembership measures a cluster's creation, a learner step and a
// member Pod's return against the references; the first run also counts
// the API writes of the creation and of the idle cluster.
func (b *bench) measureMembership(i int, ns string, s *samples) {
	before, c0, err := b.operatorWrites()
	must(err)
	t, err := b.createCluster(ns, "bench", 3)
	must(err)
	s.clusterReady = append(s.clusterReady, t)
	after, c1, err := b.operatorWrites()
	must(err)
	if i == 0 {
		s.createWrites = after - before
		s.createCounts = c1.since(c0)
	}

	// etcd refuses a membership change until every voter has been
	// connected for 5 s; the reference's lone member never waits, so
	// the cluster settles first and the two measure the same thing.
	time.Sleep(6 * time.Second)
	step, err := b.scale(ns, "bench", 4)
	must(err)
	s.scaleStep = append(s.scaleStep, step)

	back, err := b.deleteMemberPod(ns, "bench")
	must(err)
	s.memberBack = append(s.memberBack, back)
	fmt.Printf("run %d: cluster %.1fs step %.1fs member-back %.1fs\n", i+1, t, step, back)

	if i == 0 {
		// Let the last status writes of the scale settle, then watch.
		time.Sleep(5 * time.Second)
		w0, _, err := b.operatorWrites()
		must(err)
		time.Sleep(*idleWait)
		w1, _, err := b.operatorWrites()
		must(err)
		s.idleWrites = (w1 - w0) / idleWait.Minutes()
	}
}

// measureRolling upgrades a new cluster from -etcd-old-version, then
// restarts its members one by one.
func (b *bench) measureRolling(ns string, s *samples) (upgradeResult, rollResult) {
	_, err := b.createClusterAt(ns, "roll", *oldVer, 3)
	must(err)
	time.Sleep(6 * time.Second)
	up, err := b.upgrade(ns, "roll", 3, *version)
	must(err)
	s.upgradeTook, s.maxGap = append(s.upgradeTook, up.took), append(s.maxGap, up.maxGap)
	s.writes, s.failures = s.writes+up.writes, s.failures+up.failures
	for e, k := range up.errs {
		s.errs[e] += k
	}
	time.Sleep(6 * time.Second)
	roll, err := b.rollingRestart(ns, "roll", 3)
	must(err)
	s.firstBack, s.firstDone, s.rollAll = append(s.firstBack, roll.firstBack), append(s.firstDone, roll.firstDone), append(s.rollAll, roll.all)
	s.tlsWaits += roll.tlsWaits
	return up, roll
}

func (s *samples) addHealing(h healing) {
	s.failedPod, s.failedSeen = append(s.failedPod, h.failed.took), append(s.failedSeen, h.failed.visible)
	s.failedAfter = append(s.failedAfter, h.failed.took-h.failed.visible)
	s.replaced, s.emptied = append(s.replaced, h.replaced.took), append(s.emptied, h.emptied.took)
	if !h.quorumRan {
		return
	}
	s.quorum, s.quorumSeen = append(s.quorum, h.quorum.took), append(s.quorumSeen, h.quorum.visible)
	s.quorumAfter = append(s.quorumAfter, h.quorum.took-h.quorum.visible)
	if t, ok := h.quorum.phases[etcdv1.RecoveryForcing]; ok {
		s.forcingAfter = append(s.forcingAfter, t-h.quorum.visible)
	}
	if t, ok := h.quorum.phases[etcdv1.RecoveryRegrowing]; ok {
		s.regrowingAfter = append(s.regrowingAfter, t-h.quorum.visible)
	}
	s.restored, s.restoredAfter = append(s.restored, h.restored.took), append(s.restoredAfter, h.restored.took-h.restored.visible)
}

func (s *samples) addDefrag(d defragResult) {
	s.defragTook, s.defragReclaimed = append(s.defragTook, d.took), append(s.defragReclaimed, d.reclaimed)
	s.defragOther = append(s.defragOther, d.otherStall)
	if d.clients > 0 {
		s.defragStall, s.defragQuiet = append(s.defragStall, d.stall), append(s.defragQuiet, d.quiet)
		s.defragClients += d.clients
	}
}

// printRolling writes what run i measured of the rolling changes.
func printRolling(i int, up upgradeResult, roll rollResult) {
	fmt.Printf("run %d: first rolled member %s back %.1fs done %.1fs, whole roll %.1fs | upgrade %.1fs, longest write gap %.2fs (%d writes, %d failed)\n",
		i+1, roll.member, roll.firstBack, roll.firstDone, roll.all, up.took, up.maxGap, up.writes, up.failures)
	for _, l := range up.log {
		fmt.Printf("  upgrade %s\n", l)
	}
}

// printHealing writes what run i measured of the healing.
func printHealing(i int, h healing) {
	fmt.Printf("run %d: healed: failed Pod of %s %.1fs (Failed after %.1fs) | Pod and PVC of %s %.1fs | volume of %s %.1fs",
		i+1, h.failed.victim, h.failed.took, h.failed.visible, h.replaced.victim, h.replaced.took, h.emptied.victim, h.emptied.took)
	if h.quorumRan {
		fmt.Printf(" | quorum loss, recovered from %s, %.1fs (QuorumLost after %.1fs) | all lost, restored from the newest backup, %.1fs (QuorumLost after %.1fs)",
			h.quorum.victim, h.quorum.took, h.quorum.visible, h.restored.took, h.restored.visible)
	}
	fmt.Println()
	for _, hr := range []healResult{h.failed, h.replaced, h.emptied, h.quorum, h.restored} {
		for _, l := range hr.log {
			fmt.Printf("  heal %s\n", l)
		}
	}
}

// printDefrag writes what run i measured of the defragmentation.
func printDefrag(i int, d defragResult) {
	fmt.Printf("run %d: defragmented %s in %.2fs (%.1f MiB given back): %d clients on it waited up to %.2fs (%.2fs with no defragmentation), clients on other members %.2fs (%.2fs)\n",
		i+1, d.member, d.took, d.reclaimed, d.clients, d.stall, d.quiet, d.otherStall, d.otherQuiet)
}

// results are the medians of the samples.
func (s *samples) results() results {
	return results{
		podReady: median(s.podReady), podRestart: median(s.podRestart), learnerRef: median(s.learnerRef),
		clusterReady: median(s.clusterReady), scaleStep: median(s.scaleStep), memberBack: median(s.memberBack), migration: median(s.migration),
		createWrites: s.createWrites, createCounts: s.createCounts, idleWrites: s.idleWrites, runs: *runs,
		firstBack: median(s.firstBack), firstDone: median(s.firstDone), rollAll: median(s.rollAll), tlsWaits: s.tlsWaits,
		upgrade: median(s.upgradeTook), maxGap: median(s.maxGap), worstGap: maxOf(s.maxGap),
		writes: s.writes, failures: s.failures, errs: s.errs,
		failedPod: median(s.failedPod), failedSeen: median(s.failedSeen), failedAfter: median(s.failedAfter), replaced: median(s.replaced), emptied: median(s.emptied),
		quorum: median(s.quorum), quorumSeen: median(s.quorumSeen), quorumRuns: len(s.quorum),
		quorumAfter: median(s.quorumAfter), forcingAfter: median(s.forcingAfter), regrowingAfter: median(s.regrowingAfter),
		restored: median(s.restored), restoredAfter: median(s.restoredAfter),
		defragTook: median(s.defragTook), defragReclaimed: median(s.defragReclaimed), defragStall: median(s.defragStall), defragQuiet: median(s.defragQuiet),
		defragOther: median(s.defragOther), defragRuns: len(s.defragStall), defragClients: s.defragClients,
		oneToThree: median(s.oneToThree), threeToFive: median(s.threeToFive), threeToSeven: median(s.threeToSeven),
		resumed: median(s.resumed), suspended: median(s.suspended),
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// maxOf is the largest of xs, 0 for none.
func maxOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return slices.Max(xs)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

type results struct {
	podReady, podRestart, learnerRef    float64
	clusterReady, scaleStep, memberBack float64
	migration                           float64
	createWrites, idleWrites            float64
	createCounts                        writeCounts
	firstBack, firstDone, rollAll       float64
	tlsWaits                            int
	upgrade, maxGap, worstGap           float64
	writes, failures                    int
	errs                                map[string]int
	runs                                int
	failedPod, failedSeen, failedAfter  float64
	replaced, emptied                   float64
	quorum, quorumSeen, quorumAfter     float64
	forcingAfter, regrowingAfter        float64
	restored, restoredAfter             float64
	quorumRuns                          int
	defragTook, defragReclaimed         float64
	defragStall, defragQuiet            float64
	defragOther                         float64
	defragRuns, defragClients           int
	oneToThree, threeToFive             float64
	threeToSeven                        float64
	resumed, suspended                  float64
	// only are the sections that ran: the others have no rows.
	only sections
}

func (r results) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmark results\n\nWritten by `make bench` on %s; medians of %d runs on the local cluster, references measured in the same run.", time.Now().UTC().Format("2006-01-02 15:04 MST"), r.runs)
	if !r.only.all() {
		fmt.Fprintf(&b, " Only these sections ran (-only): %s.", r.only)
		if r.only.onRoll() && !r.only[secRolling] {
			fmt.Fprintf(&b, " Without the rolling changes, the storage migration and the healing run on a 3-member cluster created at %s.", *version)
		}
	}
	fmt.Fprintf(&b, "\n\n| measurement | Raftsman | reference (same run) | ratio | target |\n|---|---|---|---|---|\n")
	if r.only[secMembership] {
		fmt.Fprintf(&b, "| apply to 3 members Available | %.1f s | one etcd Pod with its PVC Ready: %.1f s | %.2f | <= 1.2 |\n", r.clusterReady, r.podReady, r.clusterReady/r.podReady)
		fmt.Fprintf(&b, "| one learner step (scale 3 -> 4 on a settled cluster) | %.1f s | a learner added to a settled one-member cluster and promoted by hand, each call retried every 100 ms: %.1f s | %.2f | <= 1.1 |\n", r.scaleStep, r.learnerRef, r.scaleStep/r.learnerRef)
		fmt.Fprintf(&b, "| deleted member Pod back and Ready | %.1f s | plain etcd Pod deleted and recreated on its PVC: %.1f s | %.2f | <= 1.2 |\n", r.memberBack, r.podRestart, r.memberBack/r.podRestart)
	}
	if r.only[secScaling] {
		scaled := func(what string, took float64, target string) {
			fmt.Fprintf(&b, "| %s | %.1f s | one etcd Pod with its PVC Ready: %.1f s | %.2f | %s |\n", what, took, r.podReady, took/r.podReady, target)
		}
		scaled("scale 3 -> 5 of a settled 3-member cluster until converged (5 healthy voters)", r.threeToFive, "<= 1.5")
		scaled("scale 1 -> 3 of a settled one-member cluster until converged (3 healthy voters)", r.oneToThree, "")
		scaled("scale 3 -> 7 of a settled 3-member cluster until converged (7 healthy voters)", r.threeToSeven, "")
	}
	if r.only[secResume] {
		fmt.Fprintf(&b, "| resume of a suspended 3-member cluster (every member Pod gone) until Available, each member on its own PVC with its member ID (suspending took %.1f s) | %.1f s | plain etcd Pod deleted and recreated on its PVC: %.1f s | %.2f | <= 1.2 |\n", r.suspended, r.resumed, r.podRestart, r.resumed/r.podRestart)
	}
	if r.only[secRolling] {
		fmt.Fprintf(&b, "| one member's rolling restart (Pod template annotation changed on a settled 3-member cluster) | %.1f s | plain etcd Pod deleted and recreated on its PVC: %.1f s | %.2f | <= 1.3 |\n", r.firstBack, r.podRestart, r.firstBack/r.podRestart)
		fmt.Fprintf(&b, "| passes of the cluster controller held for the tls controller during those Pod template changes (a change outside spec.tls; Progressing reason WaitingForTLS seen on a watch, all runs) | %d | | | 0 |\n", r.tlsWaits)
		fmt.Fprintf(&b, "| 3-member upgrade %s -> %s until converged | %.1f s | plain etcd Pod deleted and recreated on its PVC: %.1f s | %.2f | <= 3.5 |\n", *oldVer, *version, r.upgrade, r.podRestart, r.upgrade/r.podRestart)
		fmt.Fprintf(&b, "| longest gap between two successful client writes through the client Service during that upgrade (worst run: %.2f s) | %.2f s | | | <= 2 s |\n", r.worstGap, r.maxGap)
	}
	if r.only[secMigration] {
		fmt.Fprintf(&b, "| a 3-member cluster moved to another StorageClass (each member replaced: a new one added as a learner and promoted, then the old one removed) | %.1f s | 3 learner steps of this run: %.1f s | %.2f | |\n", r.migration, 3*r.scaleStep, r.migration/(3*r.scaleStep))
	}
	if r.only[secHealing] {
		heal := func(what string, took float64) {
			fmt.Fprintf(&b, "| %s | %.1f s | plain etcd Pod deleted and recreated on its PVC: %.1f s | %.2f | <= 60 s |\n", what, took, r.podRestart, took/r.podRestart)
		}
		heal("a member's Pod made Failed (spec.activeDeadlineSeconds 1) to 3 healthy voters again", r.failedPod)
		heal("a member's Pod and PVC deleted to 3 healthy voters again (member replaced)", r.replaced)
		heal("a member's volume lost with its record (status.pvcName cleared, PVC and Pod deleted) to 3 healthy voters again (DataLost, member replaced)", r.emptied)
		if r.quorumRuns > 0 {
			heal(fmt.Sprintf("2 of 3 members lost (Pods and PVCs deleted) to 3 healthy voters again, recovered by the recover-quorum annotation (%s)", runsText(r.quorumRuns)), r.quorum)
			heal(fmt.Sprintf("all 3 members lost (Pods and PVCs deleted) to 3 healthy voters again, restored from the newest backup by the recover-quorum=latest-backup annotation (%s)", runsText(r.quorumRuns)), r.restored)
		}
	}
	if r.only[secDefrag] {
		fmt.Fprintf(&b, "| defragmenting one follower holding %d MiB of data and %.0f MiB of free pages (etcd's time, status.maintenance.members) | %.2f s | | | |\n", defragValues/2, r.defragReclaimed, r.defragTook)
		if r.defragRuns > 0 {
			fmt.Fprintf(&b, "| longest wait of a client connected through the client Service to that follower while it is defragmented (%s) | %.2f s | the same clients, no defragmentation, same run: %.2f s | %.1f | |\n", runsText(r.defragRuns), r.defragStall, r.defragQuiet, r.defragStall/r.defragQuiet)
		}
	}
	if r.only[secMembership] {
		fmt.Fprintf(&b, "| operator API writes to create 3 members, TLS on (events included, lease renewals not) | %.0f | | | <= 25 |\n", r.createWrites)
		fmt.Fprintf(&b, "| of which refused with 409: Conflict (a write from a stale copy) / AlreadyExists (a create of what exists) | %.0f / %.0f | | | 0 Conflict |\n", r.createCounts.conflict, r.createCounts.alreadyExists)
		fmt.Fprintf(&b, "| operator API writes per minute, idle healthy cluster | %.1f | | | 0 |\n", r.idleWrites)
		fmt.Fprintf(&b, "\nThe API writes to create the 3-member cluster, by resource (status writes count under their resource): %s.\n", r.createCounts)
		fmt.Fprintf(&b, "\nThe learner step is measured on a cluster that has been healthy for 6 s, like its reference: right after a cluster forms or a member joins, etcd refuses the next membership change until every voter has been connected for 5 s, which the operator waits out by retrying (so a 3 -> 5 scale right after creation costs that wait once more). A hand-driven two-learner reference was tried and dropped: on this machine it varied from 7.5 s to 15 s per learner between runs. API writes are counted by the operator itself (raftsman_api_writes_total), Lease renewals (shard and presence Leases) and the metrics endpoint's own token and access reviews of the benchmark's scrapes left out.\n")
	}
	if r.only[secScaling] {
		fmt.Fprintf(&b, "\n%s\n", scalingText)
	}
	if r.only[secResume] {
		fmt.Fprintf(&b, "\n%s\n", resumeText)
	}
	if r.only[secRolling] {
		fmt.Fprintf(&b, "\nRolling changes run on a 3-member cluster of their own, created with spec.version %[1]s once the cluster of the rows above and the reference Pods are deleted, and settled for 6 s like the learner step. The upgrade is timed from the patch of spec.version to %[2]s until Progressing is False for the cluster's new generation, Available True, status.version %[2]s and no rollout left in the status. Meanwhile the benchmark puts a key every 20 ms through the cluster's client Service (etcd's Go client, TLS with the client certificate of status.tls, one endpoint: the Service, 1 s timeout per write, started before the patch); the gap is the longest time between two successful writes from the last one before the patch to the first one after convergence (the row gives the median of the %[3]d runs' longest gaps and the worst of them, %.2[4]f s; %[5]d writes succeeded and %[6]d failed over all runs%[9]s). The one-member restart is then measured on that cluster, settled again for 6 s: a Pod template annotation (spec.podTemplate.metadata.annotations) is changed, which every member rolls, and the time runs from the patch until the first member the operator restarted (a follower) has a new Pod, its EtcdMember Ready for its new generation, and is healthy in the cluster's status.members. Until the operator counts that member done (healthy and caught up: its etcd.raftsman.io/update-started annotation removed) it took %.1[7]f s, and the whole 3-member rollout %.1[8]f s.\n",
			*oldVer, *version, r.runs, r.worstGap, r.writes, r.failures, r.firstDone, r.rollAll, errorSummary(r.errs))
	}
	if r.only[secMigration] {
		fmt.Fprintf(&b, "\n%s\n", migrationText)
	}
	if r.only[secHealing] {
		fmt.Fprintf(&b, "\nHealing is measured on the rolling changes' cluster (3 members, on %[1]s since its upgrade) after its rolling restart, each failure injected once the cluster has converged on the last one and settled for 6 s; the member hit is a follower. Each time runs from the failure injected until the cluster has converged again with 3 healthy voters: Available True and Progressing False for the cluster's generation, readyReplicas 3, every status.members entry a healthy Voter, no rollout. A Failed Pod (the kubelet fails a Pod past its active deadline with reason DeadlineExceeded, as it does an evicted one, and never restarts it) counts from the patch of spec.activeDeadlineSeconds, and is healed once a new Pod of the member is Ready on the same PVC and its EtcdMember Ready again; the bench saw the old Pod Failed or gone %.1[2]f s after the patch (median), and the member was back %.1[3]f s after that (medians of each run's own figures). A lost member counts from the deletion of its PVC, then its Pod (grace period 0), and is healed once its EtcdMember is gone and no longer in status.members (the operator removed it from etcd and promoted a new learner); for the lost volume, the EtcdMember's status.pvcName was cleared just before (a status write that never landed), so the operator makes a new empty PVC and a Pod on it, whose check-data init container refuses the empty volume (DataLost), and then replaces the member.%[4]s The target counts from the failure being visible to the operator; the figures count from the injection, so they include the kubelet failing the Pod and the quorum loss being detected. The reference is the plain etcd Pod deleted and recreated on its PVC of the rows above (the reference Pod, in the same runs).\n",
			*version, r.failedSeen, r.failedAfter, r.quorumText())
	}
	if r.only[secDefrag] {
		fmt.Fprintf(&b, "\nDefragmentation runs on a 3-member cluster of its own on 1Gi volumes (a 320 MiB quota), created once the healed cluster is deleted, with spec.maintenance.defrag disabled and thresholds of 20%% and 1Mi. %[1]d values of 512 KiB are written, then written again, and the history compacted: each member holds %[2]d MiB of data and about as much of free pages. %[3]d clients of one connection each, which the Service's proxy puts on members at random, put a key every 20 ms with a 1 s timeout, like the writer of the rolling changes. After %.0[4]f s of settling, the longest time between two successful writes of each client over 10 s is the quiet figure; then the policy is enabled, the operator sees the thresholds met at once (the spec change brings a pass) and defragments the members one at a time, followers first, each taken out of the client Service 3 s before. The figures are the first member's (a follower): etcd's defragmentation time from status.maintenance.members, and the longest time between two successful writes of the clients whose connection goes to that member, around the time the status showed it in phase Defragmenting, beside the same clients' quiet figure (%[5]d clients on it in all, %[6]s; a run with none on it is left out). Clients on the other members waited up to %.2[7]f s (median of each run's longest): the drain keeps new connections off the member, but a connection a client already holds stays on it and waits for the defragmentation.\n",
			defragValues, defragValues/2, defragProbes, settle.Seconds(), r.defragClients, runsText(r.defragRuns), r.defragOther)
	}
	return b.String()
}

// migrationText says how the storage migration is measured.
const migrationText = "The storage migration runs on the rolling changes' cluster after its rolling restart, settled for 6 s: spec.storage.storageClassName is set to a second StorageClass made like the default one (same provisioner), and the time runs from the patch until the cluster has 3 EtcdMembers, each a new one on that class, and has converged with 3 healthy voters. Each member is replaced by a new member added as a learner and promoted, then removed; the reference is three learner steps of the same run."

// quorumText says how the quorum loss was measured, if it was.
func (r results) quorumText() string {
	if r.quorumRuns == 0 {
		return ""
	}
	return fmt.Sprintf(" The quorum loss (%s) deletes the PVCs and Pods of the leader and of the other follower (grace period 0), annotates the cluster with etcd.raftsman.io/recover-quorum=<the follower left> as soon as Available turns False with reason QuorumLost naming that member reachable (%.1f s after the deletion), and is healed once status.recovery.phase is Done for a recovery started after the deletion and the cluster has converged on 3 members. %.1f s of it came after the annotation: status.recovery.phase was Forcing %.1f s after it (the survivor restarting alone with --force-new-cluster), Regrowing after %.1f s (the new members joining as learners, one at a time)%s. Then, settled again, a backup of the cluster is taken to a PVC of its own (an EtcdBackup with a PVC destination, waited for until Complete), the PVCs and Pods of all 3 members are deleted, and the cluster is annotated with etcd.raftsman.io/recover-quorum=latest-backup once Available turns False with reason QuorumLost; it is healed the same way, %.1f s of it after the annotation (the old members released, a new etcd cluster made from the snapshot, two learners added).",
		runsText(r.quorumRuns), r.quorumSeen, r.quorumAfter, r.forcingAfter, r.regrowingAfter, eachRun(r.quorumRuns), r.restoredAfter)
}

func eachRun(n int) string {
	if n == 1 {
		return ""
	}
	return " (medians of each run's own figures)"
}

func runsText(n int) string {
	if n == 1 {
		return "runs=1, a single run"
	}
	return fmt.Sprintf("median of %d runs", n)
}

func (b *bench) namespace() string {
	name := "bench-" + utilrand.String(5)
	must(b.c.Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}

func (b *bench) installOperator() error {
	for _, f := range []string{*install, *reader} {
		if err := manifest.ApplyFile(b.ctx, b.c, f, "raftsman-bench"); err != nil {
			return err
		}
	}
	if err := b.c.DeleteAllOf(b.ctx, &corev1.Pod{}, client.InNamespace("raftsman-system"), client.MatchingLabels{"app.kubernetes.io/name": "raftsman"}); err != nil {
		return err
	}
	_, err := b.poll(2*time.Minute, func() (bool, error) {
		p, err := b.operatorPod()
		return err == nil && isReady(p), nil
	})
	return err
}

func (b *bench) operatorPod() (*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := b.c.List(b.ctx, pods, client.InNamespace("raftsman-system"), client.MatchingLabels{"app.kubernetes.io/name": "raftsman"}); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil && isReady(&pods.Items[i]) {
			return &pods.Items[i], nil
		}
	}
	return nil, errors.New("no ready operator pod")
}

// keptScaleSection is the part of the results file that make bench-scale
// writes, kept as it is.
func keptScaleSection(path string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := string(old)
	start := strings.Index(s, "<!-- bench-scale -->")
	end := strings.Index(s, "<!-- /bench-scale -->")
	if start < 0 || end < start {
		return ""
	}
	return "\n" + s[start:end+len("<!-- /bench-scale -->")] + "\n"
}

// writeCounts are the operator's writes the API server refused with 409,
// and its writes by resource.
type writeCounts struct {
	conflict, alreadyExists float64
	byResource              map[string]float64
}

// since is what was counted between before and c.
func (c writeCounts) since(before writeCounts) writeCounts {
	d := writeCounts{conflict: c.conflict - before.conflict, alreadyExists: c.alreadyExists - before.alreadyExists, byResource: map[string]float64{}}
	for r, n := range c.byResource {
		if n -= before.byResource[r]; n > 0 {
			d.byResource[r] = n
		}
	}
	return d
}

// String lists the writes by resource, the most first.
func (c writeCounts) String() string {
	rs := make([]string, 0, len(c.byResource))
	for r := range c.byResource {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool {
		if c.byResource[rs[i]] != c.byResource[rs[j]] {
			return c.byResource[rs[i]] > c.byResource[rs[j]]
		}
		return rs[i] < rs[j]
	})
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s %.0f", r, c.byResource[r]))
	}
	return strings.Join(parts, ", ")
}

// operatorWrites sums the operator's own count of its write requests to the
// API server, leader election's lease renewals left out (they cost the same
// whatever the number of clusters), and of those refused with 409.
func (b *bench) operatorWrites() (float64, writeCounts, error) {
	counts := writeCounts{byResource: map[string]float64{}}
	p, err := b.operatorPod()
	if err != nil {
		return 0, counts, err
	}
	body, err := scrape.Operator(b.ctx, b.cs, p, "raftsman-system", "raftsman-metrics-reader")
	if err != nil {
		return 0, counts, err
	}
	var total float64
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		// Leases are renewed whatever the clusters do; token and access
		// reviews are the metrics endpoint checking this very scrape.
		if !strings.HasPrefix(line, "raftsman_api_write") || strings.Contains(line, `resource="leases"`) ||
			strings.Contains(line, `resource="tokenreviews"`) || strings.Contains(line, `resource="subjectaccessreviews"`) {
			continue
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		switch {
		case strings.HasPrefix(line, "raftsman_api_writes_total{"):
			total += v
			if _, rest, ok := strings.Cut(line, `resource="`); ok {
				res, _, _ := strings.Cut(rest, `"`)
				counts.byResource[res] += v
			}
		case strings.HasPrefix(line, "raftsman_api_write_conflicts_total{") && strings.Contains(line, `reason="AlreadyExists"`):
			counts.alreadyExists += v
		case strings.HasPrefix(line, "raftsman_api_write_conflicts_total{"):
			counts.conflict += v
		}
	}
	return total, counts, sc.Err()
}

func isReady(p *corev1.Pod) bool {
	if p == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// poll calls fn every 50 ms until it is done and returns the seconds taken.
func (b *bench) poll(timeout time.Duration, fn func() (bool, error)) (float64, error) {
	start := time.Now()
	for time.Since(start) < timeout {
		done, err := fn()
		if err != nil {
			return 0, err
		}
		if done {
			return time.Since(start).Seconds(), nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, fmt.Errorf("timed out after %v", timeout)
}

// refPod is a plain etcd member Pod with a PVC, like the operator's but
// driven by hand.
func refPod(ns, name, initial, state string) *corev1.Pod {
	host := fmt.Sprintf("%s.ref.%s.svc.cluster.local", name, ns)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "ref"}},
		Spec: corev1.PodSpec{
			Hostname: name, Subdomain: "ref",
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), FSGroup: ptr.To[int64](65532)},
			Containers: []corev1.Container{{
				Name: "etcd", Image: "quay.io/coreos/etcd:v" + *version, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"/usr/local/bin/etcd"},
				Args: []string{"--name=" + name, "--data-dir=/var/lib/etcd/data",
					"--listen-client-urls=http://0.0.0.0:2379", "--advertise-client-urls=http://" + host + ":2379",
					"--listen-peer-urls=http://0.0.0.0:2380", "--initial-advertise-peer-urls=http://" + host + ":2380",
					"--initial-cluster=" + initial, "--initial-cluster-state=" + state, "--listen-metrics-urls=http://0.0.0.0:2381"},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(2381)}}, PeriodSeconds: 1},
				VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + name}}}},
		},
	}
}

func refPVC(ns, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-" + name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("128Mi")}},
		},
	}
}

func (b *bench) podReady(ns, name string) func() (bool, error) {
	return func() (bool, error) {
		p := &corev1.Pod{}
		err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, p)
		return err == nil && p.DeletionTimestamp == nil && isReady(p), client.IgnoreNotFound(err)
	}
}

// reference measures, by hand on the same cluster: one etcd Pod with its PVC
// from create to Ready; the same Pod deleted and recreated on its PVC; and a
// learner added with MemberAddAsLearner, started and promoted as soon as
// etcd allows, retrying every 100 ms.
func (b *bench) reference(ns string) (ready, restart, learner float64, err error) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ref", Namespace: ns}, Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: map[string]string{"app": "ref"},
		Ports: []corev1.ServicePort{{Name: "client", Port: 2379}}}}
	if err := b.c.Create(b.ctx, svc); err != nil {
		return 0, 0, 0, err
	}
	peer := func(name string) string { return fmt.Sprintf("http://%s.ref.%s.svc.cluster.local:2380", name, ns) }
	initial := "ref-0=" + peer("ref-0")
	start := time.Now()
	if err := b.c.Create(b.ctx, refPVC(ns, "ref-0")); err != nil {
		return 0, 0, 0, err
	}
	if err := b.c.Create(b.ctx, refPod(ns, "ref-0", initial, "new")); err != nil {
		return 0, 0, 0, err
	}
	if _, err := b.poll(2*time.Minute, b.podReady(ns, "ref-0")); err != nil {
		return 0, 0, 0, err
	}
	ready = time.Since(start).Seconds()
	if restart, err = b.refRestart(ns, initial); err != nil {
		return 0, 0, 0, err
	}

	// Straight to the member's Pod IP: the reference measures etcd, not
	// how soon kube-proxy follows the recreated Pod.
	pod0 := &corev1.Pod{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: "ref-0"}, pod0); err != nil {
		return 0, 0, 0, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + pod0.Status.PodIP + ":2379"}, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, 0, 0, err
	}
	defer func() { _ = cli.Close() }()
	// One learner on a settled cluster, like the operator's scale 3 -> 4.
	start = time.Now()
	if err := b.handLearner(ns, cli, "ref-1", peer("ref-1"), initial+",ref-1="+peer("ref-1")); err != nil {
		return 0, 0, 0, err
	}
	learner = time.Since(start).Seconds()
	return ready, restart, learner, nil
}

// refRestart deletes the reference's Pod and creates it again on its PVC,
// and returns how long until it was Ready.
func (b *bench) refRestart(ns, initial string) (float64, error) {
	start := time.Now()
	old := &corev1.Pod{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: "ref-0"}, old); err != nil {
		return 0, err
	}
	if err := b.c.Delete(b.ctx, old); err != nil {
		return 0, err
	}
	if _, err := b.poll(time.Minute, func() (bool, error) {
		err := b.c.Get(b.ctx, client.ObjectKeyFromObject(old), &corev1.Pod{})
		return err != nil, client.IgnoreNotFound(err)
	}); err != nil {
		return 0, err
	}
	if err := b.c.Create(b.ctx, refPod(ns, "ref-0", initial, "new")); err != nil {
		return 0, err
	}
	if _, err := b.poll(2*time.Minute, b.podReady(ns, "ref-0")); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

// handLearner adds a learner as soon as etcd allows, starts its Pod, and
// promotes it as soon as etcd allows, asking every 100 ms.
func (b *bench) handLearner(ns string, cli *clientv3.Client, name, peerURL, initial string) error {
	if err := b.c.Create(b.ctx, refPVC(ns, name)); err != nil {
		return err
	}
	var id uint64
	var last error
	if _, err := b.poll(time.Minute, func() (bool, error) {
		c, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		defer cancel()
		resp, err := cli.MemberAddAsLearner(c, []string{peerURL})
		if err == nil {
			id = resp.Member.ID
		}
		last = err
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("reference learner add: %w (last error: %v)", err, last)
	}
	if err := b.c.Create(b.ctx, refPod(ns, name, initial, "existing")); err != nil {
		return err
	}
	if _, err := b.poll(2*time.Minute, func() (bool, error) {
		time.Sleep(50 * time.Millisecond) // with poll's 50 ms: a promote every 100 ms
		c, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		defer cancel()
		_, err := cli.MemberPromote(c, id)
		last = err
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("reference promote: %w (last error: %v)", err, last)
	}
	return nil
}

func (b *bench) converged(ns, name string, n int32) func() (bool, error) {
	return func() (bool, error) {
		c := &etcdv1.EtcdCluster{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return false, err
		}
		a := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionAvailable)
		p := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionProgressing)
		return a != nil && p != nil && a.Status == metav1.ConditionTrue && p.Status == metav1.ConditionFalse &&
			a.ObservedGeneration == c.Generation && c.Status.ReadyReplicas == n && len(c.Status.Members) == int(n), nil
	}
}

func (b *bench) createCluster(ns, name string, n int32) (float64, error) {
	return b.createClusterAt(ns, name, *version, n)
}

func (b *bench) createClusterAt(ns, name, v string, n int32) (float64, error) {
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: etcdv1.EtcdClusterSpec{
		Replicas: ptr.To(n), Version: v, Storage: etcdv1.StorageSpec{Size: ptr.To(resource.MustParse("128Mi"))}}}
	start := time.Now()
	if err := b.c.Create(b.ctx, c); err != nil {
		return 0, err
	}
	if _, err := b.poll(3*time.Minute, b.converged(ns, name, n)); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

func (b *bench) scale(ns, name string, n int32) (float64, error) {
	c := &etcdv1.EtcdCluster{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		return 0, err
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Replicas = ptr.To(n)
	start := time.Now()
	if err := b.c.Patch(b.ctx, c, patch); err != nil {
		return 0, err
	}
	if _, err := b.poll(3*time.Minute, b.converged(ns, name, n)); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

func (b *bench) deleteMemberPod(ns, name string) (float64, error) {
	members := &etcdv1.EtcdMemberList{}
	if err := b.c.List(b.ctx, members, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	old := &corev1.Pod{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: members.Items[0].Name}, old); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := b.c.Delete(b.ctx, old); err != nil {
		return 0, err
	}
	if _, err := b.poll(2*time.Minute, func() (bool, error) {
		p := &corev1.Pod{}
		err := b.c.Get(b.ctx, client.ObjectKeyFromObject(old), p)
		return err == nil && p.UID != old.UID && isReady(p), client.IgnoreNotFound(err)
	}); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

// errorSummary lists the errors of failed writes with their counts, the most
// frequent first.
func errorSummary(errs map[string]int) string {
	if len(errs) == 0 {
		return ""
	}
	keys := slices.Collect(maps.Keys(errs))
	slices.SortFunc(keys, func(a, b string) int {
		if d := errs[b] - errs[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d x `%s`", errs[k], k))
	}
	return ": " + strings.Join(parts, ", ")
}
