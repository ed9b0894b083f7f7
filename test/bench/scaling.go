package main

import (
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// scaleResult is one run of the scale-ups, each from a settled cluster
// until it has converged with every member a healthy voter.
type scaleResult struct {
	oneToThree, threeToFive, threeToSeven float64
	// log is when each new member was first seen at each step, for the
	// run's output.
	log []event
}

// scalingText says how the scale-ups are measured.
const scalingText = "Scale-ups run on clusters of their own, once the clusters above and the reference Pods are deleted: a one-member cluster is created, settled for 6 s, scaled 1 -> 3, settled again and scaled 3 -> 5; then a new 3-member cluster is created, settled and scaled 3 -> 7. Each time runs from the patch of spec.replicas until the cluster has converged on its new size: Available True and Progressing False for the cluster's generation, readyReplicas the new size, every status.members entry a healthy Voter, no rollout. The operator adds the members one at a time, each as a learner promoted once it has caught up (the run's output gives, for each new member, when it was first listed by etcd and first a healthy voter). The reference is one etcd Pod with its PVC started from nothing, of the same run."

// scaleUps measures 1 -> 3 and 3 -> 5 on one cluster, then 3 -> 7 on a
// new 3-member cluster.
func (b *bench) scaleUps(ns string) (scaleResult, error) {
	var res scaleResult
	if _, err := b.createCluster(ns, "grow", 1); err != nil {
		return res, fmt.Errorf("create grow: %w", err)
	}
	var err error
	time.Sleep(settle)
	if res.oneToThree, err = b.scaleUp(ns, "grow", 3, &res.log); err != nil {
		return res, fmt.Errorf("scale 1 -> 3: %w", err)
	}
	time.Sleep(settle)
	if res.threeToFive, err = b.scaleUp(ns, "grow", 5, &res.log); err != nil {
		return res, fmt.Errorf("scale 3 -> 5: %w", err)
	}
	if err := b.clearNamespace(ns); err != nil {
		return res, err
	}
	if _, err := b.createCluster(ns, "seven", 3); err != nil {
		return res, fmt.Errorf("create seven: %w", err)
	}
	time.Sleep(settle)
	if res.threeToSeven, err = b.scaleUp(ns, "seven", 7, &res.log); err != nil {
		return res, fmt.Errorf("scale 3 -> 7: %w", err)
	}
	return res, nil
}

// scaleUp patches spec.replicas to n and times it until the cluster has
// converged on n healthy voters, logging when each new member was first
// in etcd's list and first a healthy voter.
func (b *bench) scaleUp(ns, name string, n int32, log *[]event) (float64, error) {
	c := &etcdv1.EtcdCluster{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		return 0, err
	}
	from := len(c.Status.Members)
	old := map[string]bool{}
	for _, ms := range c.Status.Members {
		old[ms.Name] = true
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Replicas = &n
	converged := b.rolledOut(ns, name, n, "")
	start := time.Now()
	if err := b.c.Patch(b.ctx, c, patch); err != nil {
		return 0, err
	}
	tl := newTimeline(start)
	if _, err := b.poll(5*time.Minute, func() (bool, error) {
		c := &etcdv1.EtcdCluster{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return false, err
		}
		for _, ms := range c.Status.Members {
			if old[ms.Name] {
				continue
			}
			tl.see(fmt.Sprintf("%d -> %d: %s listed (%s)", from, n, ms.Name, ms.Role))
			if ms.Healthy && ms.Role == etcdv1.RoleVoter {
				tl.see(fmt.Sprintf("%d -> %d: %s a healthy voter", from, n, ms.Name))
			}
		}
		return converged()
	}); err != nil {
		return 0, err
	}
	took := time.Since(start)
	*log = append(*log, tl.log...)
	*log = append(*log, event{took, fmt.Sprintf("%d -> %d: converged", from, n)})
	return took.Seconds(), nil
}

func (s *samples) addScaling(sc scaleResult) {
	s.oneToThree = append(s.oneToThree, sc.oneToThree)
	s.threeToFive = append(s.threeToFive, sc.threeToFive)
	s.threeToSeven = append(s.threeToSeven, sc.threeToSeven)
}

// printScaling writes what run i measured of the scale-ups.
func printScaling(i int, sc scaleResult) {
	fmt.Printf("run %d: scaled 1 -> 3 %.1fs | 3 -> 5 %.1fs | 3 -> 7 %.1fs\n", i+1, sc.oneToThree, sc.threeToFive, sc.threeToSeven)
	for _, l := range sc.log {
		fmt.Printf("  scale %s\n", l)
	}
}

// timeline records when each state of a measurement was first seen, for
// the run's output.
type timeline struct {
	start time.Time
	seen  map[string]bool
	log   []event
}

func newTimeline(start time.Time) *timeline {
	return &timeline{start: start, seen: map[string]bool{}}
}

// see logs what, the first time only.
func (t *timeline) see(what string) {
	if t.seen[what] {
		return
	}
	t.seen[what] = true
	t.log = append(t.log, event{time.Since(t.start), what})
}
