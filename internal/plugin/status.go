package plugin

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/pki"
)

// defaultQuota is etcd's backend quota when --quota-backend-bytes is unset.
const defaultQuota = 2 << 30

func statusCommand(run runner) *cobra.Command {
	var noEtcd, all bool
	var output string
	cmd := &cobra.Command{
		Use:   "status (CLUSTER | -A)",
		Short: "One screen on a cluster: members, leader, versions, database sizes, alarms, conditions, backups, certificates, rollout",
		Long: `One screen on a cluster. What the operator knows comes from the EtcdCluster, its
EtcdMembers, Pods, EtcdBackups and certificate Secrets; database sizes, raft indexes
and alarms come from etcd itself, asked through a port-forward to each member Pod
with the client certificate in the Secret named in status.tls.

-o json or -o yaml prints the same as a document whose fields are kept from release to
release (new ones may be added). -A shows every cluster of every namespace instead, a
line each, as "list -A" does.`,
		Example: `  kubectl raftsman status sample
  kubectl raftsman status sample -o json | jq '.members[] | select(.leader) | .name'
  kubectl raftsman status -A`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if all {
				if len(args) > 0 {
					return fmt.Errorf("status -A shows every cluster: name none, or leave out -A")
				}
				return nil
			}
			return exactArgs("CLUSTER")(cmd, args)
		},
		RunE: run(func(ctx context.Context, e *env, args []string) error {
			if all {
				return runList(ctx, e, true, output)
			}
			r, err := collectStatus(ctx, e, args[0], !noEtcd)
			if err != nil {
				return err
			}
			if output != "" {
				return writeStructured(e.streams.Out, output, r.document())
			}
			renderStatus(e.streams.Out, r)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&noEtcd, "no-etcd", false, "Do not ask etcd: show only what the Kubernetes API holds")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "Every cluster of every namespace, a line each")
	addOutput(cmd, &output)
	return cmd
}

// statusReport is everything status shows, gathered before anything is
// printed so that rendering is a pure function of it.
type statusReport struct {
	cluster *etcdv1.EtcdCluster
	members []memberRow
	// etcdNote says why etcd was not asked, when it was not.
	etcdNote string
	// alarms are etcd's active alarms; alarmsErr why they are unknown.
	alarms    []alarm
	alarmsErr string
	// newest is the newest EtcdBackup of the cluster, in any state.
	newest *etcdv1.EtcdBackup
	certs  []certRow
	// users are the cluster's EtcdUsers; usersErr why they are unknown.
	users    []etcdv1.EtcdUser
	usersErr string
	now      time.Time
}

// memberRow is one member as the operator and etcd see it.
type memberRow struct {
	name    string
	id      string
	role    etcdv1.MemberRole
	version string
	// healthy is the cluster controller's last word on it.
	healthy bool
	leader  bool
	// pod is Ready, Running, Pending, Failed, Terminating or none.
	pod     string
	etcd    *memberStatus
	etcdErr string
	// storage is the member's volume as its EtcdMember says (StorageClass
	// and size, or tmpfs); replaces names the member it replaces onto
	// storage the spec asks for.
	storage, replaces string
}

// certRow is one certificate and when it expires.
type certRow struct {
	what, secret, subject string
	notAfter              time.Time
	err                   string
}

// collectStatus reads what status shows. askEtcd false leaves etcd alone.
func collectStatus(ctx context.Context, e *env, name string, askEtcd bool) (*statusReport, error) {
	c, err := e.getCluster(ctx, name)
	if err != nil {
		return nil, err
	}
	r := &statusReport{cluster: c, now: e.now()}
	inCluster := kube.OfCluster(c.Namespace, c.Name)
	members := &etcdv1.EtcdMemberList{}
	if err := e.c.List(ctx, members, inCluster...); err != nil {
		return nil, fmt.Errorf("list etcdmembers: %w", err)
	}
	pods := &corev1.PodList{}
	if err := e.c.List(ctx, pods, inCluster...); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	r.members = memberRows(c, members.Items, pods.Items)
	switch {
	case !askEtcd:
		r.etcdNote = "not asked (--no-etcd)"
	case !slices.ContainsFunc(r.members, func(m memberRow) bool { return m.pod == podReady || m.pod == podRunning }):
		r.etcdNote = "not asked: no member Pod runs"
	default:
		r.askEtcd(ctx, e)
	}
	r.users, r.usersErr = clusterUsers(ctx, e, c)
	if r.newest, err = newestBackup(ctx, e.c, c); err != nil {
		return nil, err
	}
	r.certs = certificates(ctx, e.c, c)
	return r, nil
}

const (
	podReady       = "Ready"
	podRunning     = "Running"
	podTerminating = "Terminating"
	podNone        = "none"
)

// memberRows joins etcd's members as the cluster controller last saw them
// with the EtcdMembers and their Pods: a member may be in one list only
// (being added or removed).
func memberRows(c *etcdv1.EtcdCluster, members []etcdv1.EtcdMember, pods []corev1.Pod) []memberRow {
	rows := map[string]*memberRow{}
	row := func(name string) *memberRow {
		if rows[name] == nil {
			rows[name] = &memberRow{name: name, pod: podNone}
		}
		return rows[name]
	}
	for _, m := range c.Status.Members {
		r := row(m.Name)
		r.id, r.role, r.version, r.healthy, r.leader = m.ID, m.Role, m.Version, m.Healthy, m.Leader
	}
	for _, m := range members {
		r := row(m.Name)
		r.storage, r.replaces = storageText(m.Spec.Storage), m.Annotations[etcdv1.ReplacesAnnotation]
		if r.id == "" {
			r.id = m.Status.MemberID
		}
		if r.role == "" {
			r.role = m.Status.Role
		}
	}
	for i := range pods {
		p := &pods[i]
		name := p.Labels[etcdv1.MemberLabel]
		if name == "" {
			continue // a backup or restore agent
		}
		row(name).pod = podState(p)
	}
	out := make([]memberRow, 0, len(rows))
	for _, name := range slices.Sorted(maps.Keys(rows)) {
		out = append(out, *rows[name])
	}
	return out
}

// storageText is a member's or the spec's storage in a few words: the
// StorageClass ("default" when none is named) and size, or tmpfs and its
// limit.
func storageText(s etcdv1.StorageSpec) string {
	size := "1Gi"
	if s.Size != nil {
		size = s.Size.String()
	}
	switch {
	case s.Medium == etcdv1.StorageMediumMemory:
		return "tmpfs " + size
	case s.StorageClassName == nil || *s.StorageClassName == "":
		return "default " + size
	}
	return *s.StorageClassName + " " + size
}

func podState(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return podTerminating
	}
	if p.Status.Phase != corev1.PodRunning {
		return string(p.Status.Phase)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return podReady
		}
	}
	return podRunning
}

// askEtcd asks every running member for its status, all at once, and one
// of them for the alarms, which are the cluster's.
func (r *statusReport) askEtcd(ctx context.Context, e *env) {
	access, err := e.etcd(ctx, r.cluster)
	if err != nil {
		r.etcdNote = "not asked: " + err.Error()
		return
	}
	var wg sync.WaitGroup
	for i := range r.members {
		m := &r.members[i]
		if m.pod != podReady && m.pod != podRunning {
			continue
		}
		wg.Go(func() {
			st, err := access.Status(ctx, m.name)
			if err != nil {
				m.etcdErr = err.Error()
				return
			}
			m.etcd = &st
		})
	}
	wg.Wait()
	r.setLeader()
	r.alarmsErr = "no member answered"
	for _, m := range r.answering() {
		a, err := access.Alarms(ctx, m.name)
		if err != nil {
			r.alarmsErr = err.Error()
			continue
		}
		r.alarms, r.alarmsErr = a, ""
		break
	}
}

// answering are the members etcd answered for, the leader first.
func (r *statusReport) answering() []memberRow {
	var out []memberRow
	for _, m := range r.members {
		if m.etcd != nil {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].leader && !out[j].leader })
	return out
}

// setLeader takes the leader from etcd when a member answered: the member
// of the highest term knows best. It fills in IDs etcd told.
func (r *statusReport) setLeader() {
	var best *memberStatus
	for i := range r.members {
		m := &r.members[i]
		if m.etcd == nil {
			continue
		}
		if m.id == "" {
			m.id = etcd.FormatID(m.etcd.ID)
		}
		if best == nil || m.etcd.RaftTerm > best.RaftTerm {
			best = m.etcd
		}
	}
	if best == nil || best.Leader == 0 {
		return
	}
	for i := range r.members {
		r.members[i].leader = r.members[i].id == etcd.FormatID(best.Leader)
	}
}

// newestBackup is the EtcdBackup of the cluster created last.
func newestBackup(ctx context.Context, c client.Reader, cl *etcdv1.EtcdCluster) (*etcdv1.EtcdBackup, error) {
	list := &etcdv1.EtcdBackupList{}
	if err := c.List(ctx, list, client.InNamespace(cl.Namespace)); err != nil {
		return nil, fmt.Errorf("list etcdbackups: %w", err)
	}
	var newest *etcdv1.EtcdBackup
	for i := range list.Items {
		b := &list.Items[i]
		if b.Spec.ClusterName != cl.Name {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&b.CreationTimestamp) ||
			(newest.CreationTimestamp.Equal(&b.CreationTimestamp) && b.Name > newest.Name) {
			newest = b
		}
	}
	return newest, nil
}

// certificates reads the client and serving certificates from their
// Secrets. The CA's Secret holds its private key and is never read: its
// expiry is in status.tls.
func certificates(ctx context.Context, c client.Reader, cl *etcdv1.EtcdCluster) []certRow {
	t := cl.Status.TLS
	if cl.Spec.TLS.Disabled || t == nil {
		return nil
	}
	read := func(what, name string) certRow {
		row := certRow{what: what, secret: name}
		if name == "" {
			row.err = "no Secret in status.tls yet"
			return row
		}
		sec := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: name}, sec); err != nil {
			row.err = err.Error()
			return row
		}
		cert, err := firstCert(sec.Data[pki.CertKey])
		if err != nil {
			row.err = fmt.Sprintf("%s: %v", pki.CertKey, err)
			return row
		}
		row.subject, row.notAfter = "CN="+cert.Subject.CommonName, cert.NotAfter
		return row
	}
	rows := []certRow{read("client", t.ClientSecretName), read("server", t.ServerSecretName)}
	if t.CANotAfter != nil {
		rows = append(rows, certRow{what: "CA", secret: t.CASecretName, subject: "operator's CA", notAfter: t.CANotAfter.Time})
	}
	return rows
}

func firstCert(data []byte) (*x509.Certificate, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, fmt.Errorf("no certificate")
		}
		if b.Type == "CERTIFICATE" {
			return x509.ParseCertificate(b.Bytes)
		}
	}
}

// conditionOrder puts the cluster's own summary first, then each
// controller's conditions; others follow by name.
var conditionOrder = []string{
	etcdv1.ConditionAvailable, etcdv1.ConditionProgressing, etcdv1.ConditionDegraded,
	etcdv1.ConditionTLSReady, etcdv1.ConditionAuthReady, etcdv1.ConditionSuspended,
	etcdv1.ConditionStorageReady, etcdv1.ConditionBackupReady, etcdv1.ConditionRestoreReady,
}

// renderStatus prints the report on one screen: the cluster, its members,
// what keeps it running (alarms, backups, certificates), and its
// conditions. Each section aligns its own columns.
func renderStatus(out io.Writer, r *statusReport) {
	renderCluster(out, r)
	fmt.Fprintln(out)
	renderMembers(out, r)
	fmt.Fprintln(out)
	renderUpkeep(out, r)
	fmt.Fprintln(out)
	renderConditions(out, r)
}

// newTable aligns the columns of a section, separated by tabs.
func newTable(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
}

// line writes one line of a section.
func line(w io.Writer, format string, a ...any) {
	fmt.Fprintf(w, format+"\n", a...)
}

// renderCluster prints what the cluster is: version, members, leader,
// suspend and rollout.
func renderCluster(out io.Writer, r *statusReport) {
	c := r.cluster
	w := newTable(out)
	line(w, "Cluster:\t%s/%s, created %s", c.Namespace, c.Name, r.ago(c.CreationTimestamp.Time))
	line(w, "Version:\tdesired %s, running %s", c.Spec.Version, orDash(c.Status.Version))
	replicas := int32(3)
	if c.Spec.Replicas != nil {
		replicas = *c.Spec.Replicas
	}
	line(w, "Members:\t%d of %d voters ready (spec.replicas %d), cluster ID %s", c.Status.ReadyReplicas, c.Status.Replicas, replicas, orDash(c.Status.ClusterID))
	line(w, "Leader:\t%s", r.leaderName())
	if c.Spec.Suspend {
		line(w, "Suspend:\tspec.suspend is true")
	}
	line(w, "Rollout:\t%s", r.rollout())
	_ = w.Flush()
}

// renderMembers prints a row per member, then what etcd said of them
// beyond the columns.
func renderMembers(out io.Writer, r *statusReport) {
	w := newTable(out)
	fmt.Fprintln(w, "MEMBER\tID\tROLE\tLEADER\tVERSION\tPOD\tHEALTHY\tDB SIZE\tIN USE\tQUOTA\tRAFT TERM\tRAFT INDEX\tSTORAGE")
	var notes []string
	for _, m := range r.members {
		notes = append(notes, r.writeMemberRow(w, m)...)
	}
	_ = w.Flush()
	if r.etcdNote != "" {
		notes = append(notes, "etcd "+r.etcdNote)
	}
	for _, n := range notes {
		fmt.Fprintln(out, "  "+n)
	}
}

// writeMemberRow writes the row of one member and returns the notes on it.
func (r *statusReport) writeMemberRow(w io.Writer, m memberRow) []string {
	var notes []string
	size, inUse, quota, term, index := "-", "-", "-", "-", "-"
	version := m.version
	if s := m.etcd; s != nil {
		size, inUse, quota = etcd.FormatBytes(s.DBSize), etcd.FormatBytes(s.DBSizeInUse), etcd.FormatBytes(r.quota(s))
		term, index = fmt.Sprint(s.RaftTerm), fmt.Sprint(s.RaftIndex)
		version = s.Version
		for _, e := range s.Errors {
			notes = append(notes, fmt.Sprintf("%s: etcd reports: %s", m.name, e))
		}
	}
	if m.etcdErr != "" {
		notes = append(notes, fmt.Sprintf("%s: etcd did not answer: %s", m.name, m.etcdErr))
	}
	leader := ""
	if m.leader {
		leader = "*"
	}
	if want := storageText(r.cluster.Spec.Storage); m.storage != "" && m.storage != want {
		notes = append(notes, fmt.Sprintf("%s: on %s, spec.storage asks for %s (a new StorageClass, medium or smaller size replaces the member; a larger size grows its volume)", m.name, m.storage, want))
	}
	if m.replaces != "" && slices.ContainsFunc(r.members, func(o memberRow) bool { return o.name == m.replaces }) {
		notes = append(notes, fmt.Sprintf("%s: replaces %s", m.name, m.replaces))
	}
	fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.name, orDash(m.id), orDash(string(m.role)), leader,
		orDash(version), m.pod, yesNo(m.healthy), size, inUse, quota, term, index, orDash(m.storage))
	return notes
}

// renderUpkeep prints what keeps the cluster running: its alarms, its
// backups and its certificates.
func renderUpkeep(out io.Writer, r *statusReport) {
	w := newTable(out)
	line(w, "Alarms:\t%s", r.alarmText())
	for i, b := range r.backupLines() {
		line(w, "%s\t%s", map[bool]string{true: "Backup:", false: ""}[i == 0], b)
	}
	r.certLines(w)
	line(w, "Users:\t%s", r.userText())
	_ = w.Flush()
}

// clusterUsers lists the EtcdUsers of c; one who may not list them gets
// why instead.
func clusterUsers(ctx context.Context, e *env, c *etcdv1.EtcdCluster) ([]etcdv1.EtcdUser, string) {
	list := &etcdv1.EtcdUserList{}
	if err := e.c.List(ctx, list, client.InNamespace(c.Namespace)); err != nil {
		return nil, err.Error()
	}
	var out []etcdv1.EtcdUser
	for _, u := range list.Items {
		if u.Spec.ClusterName == c.Name {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b etcdv1.EtcdUser) int { return strings.Compare(a.Name, b.Name) })
	return out, ""
}

// userText names each EtcdUser with its Ready condition.
func (r *statusReport) userText() string {
	if r.usersErr != "" {
		return "unknown: " + r.usersErr
	}
	if len(r.users) == 0 {
		return "none (EtcdUser)"
	}
	parts := make([]string, 0, len(r.users))
	for _, u := range r.users {
		state := "not ready yet"
		if c := meta.FindStatusCondition(u.Status.Conditions, etcdv1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
			state = "ready"
		} else if c != nil {
			state = "not ready: " + c.Reason
		}
		parts = append(parts, fmt.Sprintf("%s (%d prefixes, %s)", u.Name, len(u.Spec.Permissions), state))
	}
	return strings.Join(parts, ", ")
}

// certLines writes the certificates' lines: each one's subject and expiry,
// the next renewal and a CA rotation under way.
func (r *statusReport) certLines(w io.Writer) {
	c := r.cluster
	if c.Spec.TLS.Disabled {
		line(w, "Certificates:\tnone (spec.tls.disabled)")
	}
	for i, cr := range r.certs {
		label := map[bool]string{true: "Certificates:", false: ""}[i == 0]
		if cr.err != "" {
			line(w, "%s\t%s\t%s\tunreadable: %s", label, cr.what, cr.secret, cr.err)
			continue
		}
		line(w, "%s\t%s\t%s\t%s, expires %s", label, cr.what, cr.secret, cr.subject, r.at(cr.notAfter))
	}
	if t := c.Status.TLS; t != nil && t.RenewAt != nil {
		line(w, "\trenewal\t\tnext at %s", r.at(t.RenewAt.Time))
	}
	if t := c.Status.TLS; t != nil && t.CARotation != "" {
		line(w, "\tCA rotation\t\t%s", t.CARotation)
	}
}

// renderConditions prints the cluster's conditions in conditionOrder; a
// condition of another generation is marked stale.
func renderConditions(out io.Writer, r *statusReport) {
	c := r.cluster
	w := newTable(out)
	fmt.Fprintln(w, "CONDITION\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, cond := range sortedConditions(c.Status.Conditions) {
		status := string(cond.Status)
		if cond.ObservedGeneration != c.Generation {
			// Another generation's word counts as Unknown (see conditions.go).
			status += " (stale)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", cond.Type, status, cond.Reason,
			duration.HumanDuration(r.now.Sub(cond.LastTransitionTime.Time)), cond.Message)
	}
	_ = w.Flush()
}

func (r *statusReport) leaderName() string {
	for _, m := range r.members {
		if m.leader {
			return fmt.Sprintf("%s (%s)", m.name, orDash(m.id))
		}
	}
	return "none known"
}

func (r *statusReport) rollout() string {
	c := r.cluster
	ro := c.Status.Rollout
	if ro == nil {
		if c.Status.Version != "" && c.Status.Version != c.Spec.Version {
			return "none under way; members run " + c.Status.Version + ", the spec says " + c.Spec.Version
		}
		return "none"
	}
	parts := []string{fmt.Sprintf("%d of %d members updated", ro.Updated, ro.Total)}
	if ro.Member != "" {
		s := "now " + ro.Member
		if ro.Since != nil {
			s += " (for " + duration.HumanDuration(r.now.Sub(ro.Since.Time)) + ")"
		}
		parts = append(parts, s)
	}
	if ro.DowngradeTarget != "" {
		parts = append(parts, "etcd downgrade to "+ro.DowngradeTarget+" enabled")
	}
	if ro.SnapshottedFor != "" {
		parts = append(parts, "every member snapshotted for "+ro.SnapshottedFor)
	}
	return strings.Join(parts, ", ")
}

// quota is the member's backend quota: etcd says it from 3.6 on; before,
// it is the spec's, or etcd's default.
func (r *statusReport) quota(s *memberStatus) int64 {
	if s.DBSizeQuota > 0 {
		return s.DBSizeQuota
	}
	if q := r.cluster.Spec.Options.QuotaBackendBytes; q != nil && *q > 0 {
		return *q
	}
	return defaultQuota
}

func (r *statusReport) alarmText() string {
	if r.etcdNote != "" {
		return "unknown: etcd " + r.etcdNote
	}
	if r.alarmsErr != "" {
		return "unknown: " + r.alarmsErr
	}
	if len(r.alarms) == 0 {
		return "none"
	}
	names := map[string]string{}
	for _, m := range r.members {
		names[m.id] = m.name
	}
	var parts []string
	for _, a := range r.alarms {
		who := etcd.FormatID(a.MemberID)
		if n, ok := names[who]; ok {
			who = n
		}
		parts = append(parts, a.Type+" on "+who)
	}
	return strings.Join(parts, ", ")
}

func (r *statusReport) backupLines() []string {
	c := r.cluster
	var lines []string
	var last *etcdv1.BackupRecord
	if c.Status.Backup != nil {
		last = c.Status.Backup.LastSuccessfulBackup
	}
	if last != nil {
		lines = append(lines, fmt.Sprintf("last complete %s, taken %s, revision %d, %s", last.Name, r.at(last.Time.Time), last.Revision, last.URI))
	} else {
		lines = append(lines, "no complete backup recorded")
	}
	if b := r.newest; b != nil && (last == nil || b.Name != last.Name) {
		lines = append(lines, fmt.Sprintf("newest %s, created %s: %s", b.Name, r.ago(b.CreationTimestamp.Time), backupState(b)))
	}
	switch {
	case c.Spec.Backup == nil:
		lines = append(lines, "no schedule (spec.backup)")
	case c.Status.Backup != nil && c.Status.Backup.NextScheduleTime != nil:
		lines = append(lines, fmt.Sprintf("schedule %q, next %s", c.Spec.Backup.Schedule, r.at(c.Status.Backup.NextScheduleTime.Time)))
	default:
		lines = append(lines, fmt.Sprintf("schedule %q", c.Spec.Backup.Schedule))
	}
	return lines
}

// backupState is Complete, Failed with its message, or where it is.
func backupState(b *etcdv1.EtcdBackup) string {
	if f := meta.FindStatusCondition(b.Status.Conditions, etcdv1.ConditionFailed); f != nil && f.Status == metav1.ConditionTrue {
		return "Failed: " + f.Message
	}
	done := meta.FindStatusCondition(b.Status.Conditions, etcdv1.ConditionComplete)
	switch {
	case done == nil:
		return "not started"
	case done.Status == metav1.ConditionTrue:
		return fmt.Sprintf("Complete, %s, revision %d", etcd.FormatBytes(b.Status.Size), b.Status.Revision)
	}
	return done.Reason
}

func sortedConditions(conds []metav1.Condition) []metav1.Condition {
	out := slices.Clone(conds)
	rank := func(t string) int {
		if i := slices.Index(conditionOrder, t); i >= 0 {
			return i
		}
		return len(conditionOrder)
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank(out[i].Type), rank(out[j].Type)
		if ri != rj {
			return ri < rj
		}
		return out[i].Type < out[j].Type
	})
	return out
}

// at writes a time in UTC and how far it is from now.
func (r *statusReport) at(t time.Time) string {
	d := t.Sub(r.now)
	if d >= 0 {
		return fmt.Sprintf("%s (in %s)", t.UTC().Format(time.RFC3339), duration.HumanDuration(d))
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), duration.HumanDuration(-d))
}

func (r *statusReport) ago(t time.Time) string {
	return duration.HumanDuration(r.now.Sub(t)) + " ago"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
