package plugin

import (
	"time"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// statusDocument is status -o json|yaml: what status shows, in fields that
// keep their names from release to release (new ones may be added).
type statusDocument struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Created   time.Time `json:"created"`
	// DesiredVersion is spec.version, RunningVersion what the members run.
	DesiredVersion string `json:"desiredVersion"`
	RunningVersion string `json:"runningVersion,omitempty"`
	// Replicas is spec.replicas; Voters and ReadyVoters count the voters.
	Replicas    int32  `json:"replicas"`
	Voters      int32  `json:"voters"`
	ReadyVoters int32  `json:"readyVoters"`
	ClusterID   string `json:"clusterID,omitempty"`
	// Leader is the leading member's name, "" when none is known.
	Leader    string                `json:"leader,omitempty"`
	Suspended bool                  `json:"suspended"`
	Rollout   *etcdv1.RolloutStatus `json:"rollout,omitempty"`
	Members   []memberDocument      `json:"members"`
	// EtcdNote says why etcd was not asked, when it was not.
	EtcdNote string `json:"etcdNote,omitempty"`
	// Alarms are etcd's active alarms; AlarmsError why they are unknown.
	Alarms       []alarmDocument     `json:"alarms"`
	AlarmsError  string              `json:"alarmsError,omitempty"`
	Backup       backupDocument      `json:"backup"`
	Certificates []certDocument      `json:"certificates,omitempty"`
	Conditions   []conditionDocument `json:"conditions"`
}

type memberDocument struct {
	Name    string `json:"name"`
	ID      string `json:"id,omitempty"`
	Role    string `json:"role,omitempty"`
	Leader  bool   `json:"leader"`
	Version string `json:"version,omitempty"`
	// Pod is Ready, Running, Pending, Failed, Terminating or none.
	Pod string `json:"pod"`
	// Healthy is the operator's last word on the member.
	Healthy bool `json:"healthy"`
	// Storage is the member's volume: StorageClass ("default") and size,
	// or tmpfs and its limit; Replaces the member it replaces.
	Storage  string `json:"storage,omitempty"`
	Replaces string `json:"replaces,omitempty"`
	// Etcd is what the member said of itself; EtcdError why it did not.
	Etcd      *memberEtcdDocument `json:"etcd,omitempty"`
	EtcdError string              `json:"etcdError,omitempty"`
}

type memberEtcdDocument struct {
	Version          string   `json:"version"`
	DBSize           int64    `json:"dbSize"`
	DBSizeInUse      int64    `json:"dbSizeInUse"`
	Quota            int64    `json:"quota"`
	RaftTerm         uint64   `json:"raftTerm"`
	RaftIndex        uint64   `json:"raftIndex"`
	RaftAppliedIndex uint64   `json:"raftAppliedIndex"`
	Revision         int64    `json:"revision"`
	IsLearner        bool     `json:"isLearner"`
	StorageVersion   string   `json:"storageVersion,omitempty"`
	DowngradeTarget  string   `json:"downgradeTarget,omitempty"`
	Errors           []string `json:"errors,omitempty"`
}

type alarmDocument struct {
	Type     string `json:"type"`
	MemberID string `json:"memberID"`
	Member   string `json:"member,omitempty"`
}

type backupDocument struct {
	LastComplete *etcdv1.BackupRecord `json:"lastComplete,omitempty"`
	// Newest is the newest EtcdBackup of the cluster, in any state.
	Newest       *newestBackupDocument `json:"newest,omitempty"`
	Schedule     string                `json:"schedule,omitempty"`
	NextSchedule *time.Time            `json:"nextSchedule,omitempty"`
}

type newestBackupDocument struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	State   string    `json:"state"`
}

type certDocument struct {
	What     string     `json:"what"`
	Secret   string     `json:"secret"`
	Subject  string     `json:"subject,omitempty"`
	NotAfter *time.Time `json:"notAfter,omitempty"`
	Error    string     `json:"error,omitempty"`
}

type conditionDocument struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason"`
	Message            string    `json:"message"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
	// Stale: the condition is of another generation than the spec's.
	Stale bool `json:"stale"`
}

// document is the report as statusDocument.
func (r *statusReport) document() *statusDocument {
	c := r.cluster
	d := &statusDocument{
		Namespace: c.Namespace, Name: c.Name, Created: c.CreationTimestamp.UTC(),
		DesiredVersion: c.Spec.Version, RunningVersion: c.Status.Version,
		Replicas: 3, Voters: c.Status.Replicas, ReadyVoters: c.Status.ReadyReplicas, ClusterID: c.Status.ClusterID,
		Suspended: c.Spec.Suspend, Rollout: c.Status.Rollout, EtcdNote: r.etcdNote, AlarmsError: r.alarmsErr,
		Members: []memberDocument{}, Alarms: []alarmDocument{}, Conditions: []conditionDocument{},
	}
	if c.Spec.Replicas != nil {
		d.Replicas = *c.Spec.Replicas
	}
	names := map[string]string{}
	for _, m := range r.members {
		names[m.id] = m.name
		if m.leader {
			d.Leader = m.name
		}
		d.Members = append(d.Members, r.memberDocument(m))
	}
	for _, a := range r.alarms {
		id := etcd.FormatID(a.MemberID)
		d.Alarms = append(d.Alarms, alarmDocument{Type: a.Type, MemberID: id, Member: names[id]})
	}
	d.Backup = r.backupDocument()
	for _, cr := range r.certs {
		cd := certDocument{What: cr.what, Secret: cr.secret, Subject: cr.subject, Error: cr.err}
		if !cr.notAfter.IsZero() {
			t := cr.notAfter.UTC()
			cd.NotAfter = &t
		}
		d.Certificates = append(d.Certificates, cd)
	}
	for _, cond := range sortedConditions(c.Status.Conditions) {
		d.Conditions = append(d.Conditions, conditionDocument{Type: cond.Type, Status: string(cond.Status), Reason: cond.Reason,
			Message: cond.Message, LastTransitionTime: cond.LastTransitionTime.UTC(), Stale: cond.ObservedGeneration != c.Generation})
	}
	return d
}

func (r *statusReport) memberDocument(m memberRow) memberDocument {
	md := memberDocument{Name: m.name, ID: m.id, Role: string(m.role), Leader: m.leader, Version: m.version,
		Pod: m.pod, Healthy: m.healthy, EtcdError: m.etcdErr, Storage: m.storage, Replaces: m.replaces}
	if s := m.etcd; s != nil {
		md.Version = s.Version
		md.Etcd = &memberEtcdDocument{Version: s.Version, DBSize: s.DBSize, DBSizeInUse: s.DBSizeInUse, Quota: r.quota(s),
			RaftTerm: s.RaftTerm, RaftIndex: s.RaftIndex, RaftAppliedIndex: s.RaftAppliedIndex, Revision: s.Revision,
			IsLearner: s.IsLearner, StorageVersion: s.StorageVersion, DowngradeTarget: s.DowngradeTarget, Errors: s.Errors}
	}
	return md
}

func (r *statusReport) backupDocument() backupDocument {
	c := r.cluster
	var d backupDocument
	if c.Status.Backup != nil {
		d.LastComplete = c.Status.Backup.LastSuccessfulBackup
		if t := c.Status.Backup.NextScheduleTime; t != nil {
			next := t.UTC()
			d.NextSchedule = &next
		}
	}
	if c.Spec.Backup != nil {
		d.Schedule = string(c.Spec.Backup.Schedule)
	}
	if b := r.newest; b != nil {
		d.Newest = &newestBackupDocument{Name: b.Name, Created: b.CreationTimestamp.UTC(), State: backupState(b)}
	}
	return d
}
