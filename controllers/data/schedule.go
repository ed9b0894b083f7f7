package data

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/schedule"
)

// scheduleFacts are what BackupReady and status.backup are made from.
type scheduleFacts struct {
	invalid error
	// newest is the newest finished scheduled backup.
	newest *etcdv1.EtcdBackup
	// lastSuccess is the newest complete backup of any kind.
	lastSuccess *etcdv1.EtcdBackup
	next        time.Time
	// skipped says why a due backup was not started.
	skipped string
}

// reconcileSchedule creates the scheduled EtcdBackup that is due, and
// deletes the scheduled ones retention expires (their snapshots go with
// them). Backup names come from the scheduled time, so a pass that runs
// twice for one time creates one backup.
func (r *Reconciler) reconcileSchedule(ctx context.Context, s *scope) (ctrl.Result, error) {
	c, f := s.cluster, &s.sched
	for _, b := range s.backups {
		if kube.IsTrue(b.Status.Conditions, etcdv1.ConditionComplete, b.Generation) {
			f.lastSuccess = b
		}
		if b.Labels[etcdv1.BackupKindLabel] == "scheduled" && b.Finished() {
			f.newest = b
		}
	}
	if c.Spec.Backup == nil {
		return ctrl.Result{}, nil
	}
	sched, err := schedule.Parse(string(c.Spec.Backup.Schedule))
	if err != nil {
		f.invalid = err
		return ctrl.Result{}, nil
	}
	// Clusters that share a schedule start their backups apart.
	sched = schedule.Spread(sched, c.Namespace+"/"+c.Name)
	var last time.Time
	if st := c.Status.Backup; st != nil && st.LastScheduleTime != nil {
		last = st.LastScheduleTime.Time
	}
	due, at, next := schedule.Decide(sched, c.CreationTimestamp.Time, last, s.now, r.Options.StartingDeadline)
	f.next = next
	if due {
		switch {
		case c.Spec.Suspend:
			f.skipped = "the cluster is suspended"
		case !kube.IsTrue(c.Status.Conditions, etcdv1.ConditionAvailable, c.Generation):
			f.skipped = "the cluster is not Available"
		default:
			if err := r.startScheduled(ctx, s, at); err != nil {
				return ctrl.Result{}, err
			}
		}
		if f.skipped != "" && r.Options.StartingDeadline > 0 && s.now.Sub(at) >= r.Options.StartingDeadline {
			// Too late now: the next time is taken on time instead.
			setLastSchedule(c, at)
		}
	}
	if err := r.applyRetention(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if next.IsZero() {
		return ctrl.Result{}, nil
	}
	// A backup skipped for now is taken when the cluster becomes Available
	// or resumes: those changes of the cluster wake this controller.
	return ctrl.Result{RequeueAfter: max(next.Sub(s.now), time.Second)}, nil
}

func (r *Reconciler) startScheduled(ctx context.Context, s *scope, at time.Time) error {
	c := s.cluster
	b := newBackup(c, fmt.Sprintf("%s-%s", c.Name, at.UTC().Format("20060102-1504")), "scheduled")
	b.Annotations = map[string]string{etcdv1.ScheduledAtAnnotation: at.UTC().Format(time.RFC3339)}
	ctrl.LoggerFrom(ctx).Info("Starting a scheduled backup", "backup", b.Name, "scheduledAt", at)
	if err := r.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create backup %s: %w", b.Name, err)
	}
	setLastSchedule(c, at)
	return nil
}

func setLastSchedule(c *etcdv1.EtcdCluster, at time.Time) {
	if c.Status.Backup == nil {
		c.Status.Backup = &etcdv1.ClusterBackupStatus{}
	}
	c.Status.Backup.LastScheduleTime = &metav1.Time{Time: at}
}

// applyRetention deletes the scheduled backups the policy expires. Backups
// a user made, and final backups of a suspend, are never deleted here.
func (r *Reconciler) applyRetention(ctx context.Context, s *scope) error {
	ret := s.cluster.Spec.Backup.Retention
	policy := schedule.Retention{}
	if ret.KeepLast != nil {
		policy.KeepLast = int(*ret.KeepLast)
	}
	if ret.MaxAge != nil {
		policy.MaxAge = ret.MaxAge.Duration
	}
	if policy.KeepLast == 0 && policy.MaxAge == 0 {
		return nil
	}
	var items []schedule.Backup
	byName := map[string]*etcdv1.EtcdBackup{}
	for _, b := range s.backups {
		if b.Labels[etcdv1.BackupKindLabel] != "scheduled" || !b.DeletionTimestamp.IsZero() {
			continue
		}
		byName[b.Name] = b
		items = append(items, schedule.Backup{
			Name: b.Name, Time: b.CreationTimestamp.Time,
			Complete: kube.IsTrue(b.Status.Conditions, etcdv1.ConditionComplete, b.Generation),
			Failed:   kube.IsTrue(b.Status.Conditions, etcdv1.ConditionFailed, b.Generation),
		})
	}
	for _, name := range policy.Expired(items, s.now) {
		b := byName[name]
		ctrl.LoggerFrom(ctx).Info("Deleting an expired backup", "backup", name)
		if err := r.Delete(ctx, b, client.Preconditions{UID: &b.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete expired backup %s: %w", name, err)
		}
		// The backup controller deletes what a failed run stored too, but
		// only a complete backup's status is this controller's to read.
		what := "backup " + name
		if uri := snapshotURI(b); uri != "" {
			what += " and its snapshot " + uri
		}
		r.Recorder.Eventf(s.cluster, b, corev1.EventTypeNormal, "BackupExpired", "Retention", "Deleted %s (retention)", what)
	}
	return nil
}
