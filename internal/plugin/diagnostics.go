package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
)

type diagnosticsOptions struct {
	file       string
	tail       int64
	limitBytes int64
	operatorNS string
	noEtcd     bool
}

// diagnosticsLayout is the top of README.txt: what each part holds.
const diagnosticsLayout = `Layout:
  objects/     the EtcdCluster, its EtcdMembers, EtcdBackups, Pods (members and agents),
               PersistentVolumeClaims, Services and their Events, as YAML lists;
               secrets.txt names the Secrets the cluster refers to
  status.txt   kubectl raftsman status; status.json the same as data
  etcd/        etcd's member list joined with the EtcdMembers, each member's own status
               and the alarms, asked through port-forwards
  logs/        every container of the member and agent Pods; *.previous.log is the
               container's log before its last restart
  operator/    the operator's Deployments and Pods, and its containers' logs
Secrets: no Secret's data is collected, only names.
`

func diagnosticsCommand(run runner) *cobra.Command {
	o := diagnosticsOptions{}
	cmd := &cobra.Command{
		Use:   "diagnostics CLUSTER [-f FILE]",
		Short: "One archive to attach to a bug report: objects, events, logs, etcd's status",
		Long: `Write a tar.gz with what it takes to look into a cluster's trouble: the EtcdCluster, its
EtcdMembers, EtcdBackups, Pods, PersistentVolumeClaims, Services and their Events as YAML; the
status screen and its JSON; etcd's member list, each member's status and the alarms; the logs of
every container of the member and agent Pods (with the log before the last restart, if any);
the operator's Deployments, Pods and logs (found by the label app.kubernetes.io/name=raftsman).
README.txt in the archive lists every file and what could not be collected and why (a missing
permission is noted, not an error). No Secret's data is ever read into it: only names. Pod
specs are included as they are: an environment value you wrote into the Pod template is in
them. Read-only.`,
		Example: `  kubectl raftsman diagnostics sample
  kubectl raftsman diagnostics sample -f /tmp/sample.tar.gz --tail 2000`,
		Args: exactArgs("CLUSTER"),
		RunE: run(func(ctx context.Context, e *env, args []string) error {
			return runDiagnostics(ctx, e, args[0], o)
		}),
	}
	cmd.Flags().StringVarP(&o.file, "file", "f", "", "The archive to write (default raftsman-diagnostics-<namespace>-<cluster>-<UTC time>.tar.gz)")
	cmd.Flags().Int64Var(&o.tail, "tail", 20000, "Lines of each container log, from its end; -1 for all")
	cmd.Flags().Int64Var(&o.limitBytes, "limit-bytes", 16<<20, "Bytes of each container log at most")
	cmd.Flags().StringVar(&o.operatorNS, "operator-namespace", defaultOperatorNamespace, "Where to look for the operator when Pods of every namespace may not be listed")
	cmd.Flags().BoolVar(&o.noEtcd, "no-etcd", false, "Do not ask etcd")
	return cmd
}

func runDiagnostics(ctx context.Context, e *env, name string, o diagnosticsOptions) error {
	// An undecodable cluster is collected too: its status and etcd's
	// view are then noted as not collected.
	c, err := e.readCluster(ctx, name)
	if err != nil {
		return err
	}
	stamp := e.now().UTC().Format("20060102-150405")
	dir := fmt.Sprintf("raftsman-diagnostics-%s-%s-%s", c.Namespace, c.Name, stamp)
	if o.file == "" {
		o.file = dir + ".tar.gz"
	}
	if _, err := os.Stat(o.file); err == nil {
		return fmt.Errorf("%s exists: remove it or name another file with -f", o.file)
	}
	part := o.file + ".part"
	f, err := os.OpenFile(part, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	a := newArchive(f, dir, e.now())
	collectDiagnostics(ctx, e, c, o, a)
	header := fmt.Sprintf("Raftsman diagnostics of EtcdCluster %s/%s\nCollected %s by kubectl-raftsman %s\n\n%s",
		c.Namespace, c.Name, e.now().UTC().Format(time.RFC3339), pluginVersion(), diagnosticsLayout)
	err = a.close(header)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(part, o.file)
	}
	if err != nil {
		_ = os.Remove(part)
		return fmt.Errorf("write %s: %w", o.file, err)
	}
	fmt.Fprintf(e.streams.Out, "diagnostics of %s/%s written to %s: %d files", c.Namespace, c.Name, o.file, len(a.files))
	if len(a.missing) > 0 {
		fmt.Fprintf(e.streams.Out, "; %d things not collected, listed in README.txt", len(a.missing))
	}
	fmt.Fprintln(e.streams.Out)
	return nil
}

func collectDiagnostics(ctx context.Context, e *env, c *etcdv1.EtcdCluster, o diagnosticsOptions, a *archive) {
	pods := collectObjects(ctx, e, c, a)
	collectEtcd(ctx, e, c, !o.noEtcd, a)
	for _, p := range pods {
		collectLogs(ctx, e, p, "logs/"+p.Name, o, a)
	}
	collectOperator(ctx, e, o, a)
}

// listed lists the objects of list that keep says to keep.
func listed(ctx context.Context, e *env, list client.ObjectList, keep func(client.Object) bool, opts ...client.ListOption) ([]client.Object, error) {
	if err := e.c.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for _, it := range items {
		if o, ok := it.(client.Object); ok && (keep == nil || keep(o)) {
			out = append(out, o)
		}
	}
	return out, nil
}

// addObjects writes objs as a YAML List, with their kinds and without
// their managed fields.
func addObjects(e *env, a *archive, name string, objs []client.Object) {
	items := make([]any, 0, len(objs))
	for _, o := range objs {
		o.SetManagedFields(nil)
		if gvk, err := e.c.GroupVersionKindFor(o); err == nil {
			o.GetObjectKind().SetGroupVersionKind(gvk)
		}
		items = append(items, o)
	}
	a.addYAML(name, map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
}

// collectObjects writes the cluster's objects and their events, and
// returns its Pods (members' and agents').
func collectObjects(ctx context.Context, e *env, c *etcdv1.EtcdCluster, a *archive) []*corev1.Pod {
	addObjects(e, a, "objects/etcdcluster.yaml", []client.Object{c.DeepCopy()})
	a.add("objects/secrets.txt", []byte(secretNames(c)))
	// owners are the UIDs of the cluster and of its backups, gathered as
	// they are listed: the agent Pods listed after them are theirs.
	owners := map[types.UID]bool{c.UID: c.UID != ""}
	inCluster := kube.OfCluster(c.Namespace, c.Name)
	var all []client.Object
	kinds := []struct {
		file string
		list client.ObjectList
		keep func(client.Object) bool
		opts []client.ListOption
	}{
		{"etcdmembers", &etcdv1.EtcdMemberList{}, nil, inCluster},
		{"etcdbackups", &etcdv1.EtcdBackupList{}, func(o client.Object) bool {
			ok := o.(*etcdv1.EtcdBackup).Spec.ClusterName == c.Name
			owners[o.GetUID()] = owners[o.GetUID()] || (ok && o.GetUID() != "")
			return ok
		}, []client.ListOption{client.InNamespace(c.Namespace)}},
		{"pods", &corev1.PodList{}, func(o client.Object) bool { return ownedBy(o, c.Name, owners) }, []client.ListOption{client.InNamespace(c.Namespace)}},
		{"persistentvolumeclaims", &corev1.PersistentVolumeClaimList{}, func(o client.Object) bool {
			return ownedBy(o, c.Name, owners) || o.GetLabels()[etcdv1.RetainedFromLabel] == c.Name
		}, []client.ListOption{client.InNamespace(c.Namespace)}},
		{"services", &corev1.ServiceList{}, nil, inCluster},
	}
	var pods []*corev1.Pod
	for _, k := range kinds {
		objs, err := listed(ctx, e, k.list, k.keep, k.opts...)
		if err != nil {
			a.fail("objects/"+k.file+".yaml", err)
			continue
		}
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				pods = append(pods, p.DeepCopy())
			}
		}
		all = append(all, objs...)
		addObjects(e, a, "objects/"+k.file+".yaml", objs)
	}
	collectEvents(ctx, e, c, append(all, c), a)
	return pods
}

// ownedBy: the object is of the cluster by its label, or an owner is the
// cluster or one of its backups (an agent Pod).
func ownedBy(o client.Object, cluster string, owners map[types.UID]bool) bool {
	if o.GetLabels()[etcdv1.ClusterLabel] == cluster {
		return true
	}
	return slices.ContainsFunc(o.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return owners[r.UID] })
}

// collectEvents writes the events of the namespace about objs, oldest first.
func collectEvents(ctx context.Context, e *env, c *etcdv1.EtcdCluster, objs []client.Object, a *archive) {
	uids, names := map[types.UID]bool{}, map[string]bool{}
	for _, o := range objs {
		uids[o.GetUID()] = o.GetUID() != ""
		if gvk, err := e.c.GroupVersionKindFor(o); err == nil {
			names[gvk.Kind+"/"+o.GetName()] = true
		}
	}
	events, err := listed(ctx, e, &corev1.EventList{}, func(o client.Object) bool {
		ref := o.(*corev1.Event).InvolvedObject
		return uids[ref.UID] || names[ref.Kind+"/"+ref.Name]
	}, client.InNamespace(c.Namespace))
	if err != nil {
		a.fail("objects/events.yaml", err)
		return
	}
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	addObjects(e, a, "objects/events.yaml", events)
}

func eventTime(o client.Object) time.Time {
	ev := o.(*corev1.Event)
	for _, t := range []time.Time{ev.LastTimestamp.Time, ev.EventTime.Time, ev.FirstTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return ev.CreationTimestamp.Time
}

// secretNames lists the Secrets the cluster's spec and status name: the
// values of every field ending in SecretName, and the names of every
// field ending in SecretRef.
func secretNames(c *etcdv1.EtcdCluster) string {
	var names []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if strings.HasSuffix(key, "SecretRef") || strings.HasSuffix(key, "secretRef") {
				if n, ok := v["name"].(string); ok {
					names = append(names, key+": "+n)
				}
			}
			for k, x := range v {
				walk(k, x)
			}
		case []any:
			for _, x := range v {
				walk(key, x)
			}
		case string:
			if strings.HasSuffix(key, "SecretName") {
				names = append(names, key+": "+v)
			}
		}
	}
	var doc map[string]any
	data, _ := json.Marshal(struct {
		Spec   etcdv1.EtcdClusterSpec   `json:"spec"`
		Status etcdv1.EtcdClusterStatus `json:"status"`
	}{c.Spec, c.Status})
	_ = json.Unmarshal(data, &doc)
	walk("", doc)
	slices.Sort(names)
	names = slices.Compact(names)
	return "The Secrets the EtcdCluster names (field: Secret); their data is not collected.\n" + strings.Join(names, "\n") + "\n"
}

// collectEtcd writes the status screen and its data, and etcd's member
// list joined with the EtcdMembers.
func collectEtcd(ctx context.Context, e *env, c *etcdv1.EtcdCluster, askEtcd bool, a *archive) {
	r, err := collectStatus(ctx, e, c.Name, askEtcd)
	if err != nil {
		a.fail("status.txt", err)
	} else {
		var b bytes.Buffer
		renderStatus(&b, r)
		a.add("status.txt", b.Bytes())
		doc := r.document()
		addJSON(a, "status.json", doc)
		addJSON(a, "etcd/endpoint-status.json", doc.Members)
		addJSON(a, "etcd/alarms.json", map[string]any{"alarms": doc.Alarms, "error": doc.AlarmsError, "etcdNote": doc.EtcdNote})
	}
	if !askEtcd {
		return
	}
	rows, note, err := collectMembers(ctx, e, c.Name)
	switch {
	case err != nil:
		a.fail("etcd/member-list.json", err)
	case note != "":
		a.fail("etcd/member-list.json", fmt.Errorf("%s", note))
	default:
		addJSON(a, "etcd/member-list.json", rows)
	}
}

func addJSON(a *archive, name string, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		a.fail(name, err)
		return
	}
	a.add(name, append(data, '\n'))
}

// collectLogs writes the log of every container of p into dir, and its
// log before the last restart when it restarted.
func collectLogs(ctx context.Context, e *env, p *corev1.Pod, dir string, o diagnosticsOptions, a *archive) {
	statuses := append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...)
	var names []string
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		names = append(names, c.Name)
	}
	for _, name := range names {
		restarted := slices.ContainsFunc(statuses, func(s corev1.ContainerStatus) bool {
			return s.Name == name && (s.RestartCount > 0 || s.LastTerminationState.Terminated != nil)
		})
		for _, previous := range []bool{false, true} {
			if previous && !restarted {
				continue
			}
			file := path.Join(dir, name+".log")
			if previous {
				file = path.Join(dir, name+".previous.log")
			}
			opts := &corev1.PodLogOptions{Container: name, Previous: previous, LimitBytes: &o.limitBytes}
			if o.tail >= 0 {
				opts.TailLines = &o.tail
			}
			data, err := e.logs(ctx, p.Namespace, p.Name, opts)
			if err != nil {
				a.fail(file, err)
				continue
			}
			a.add(file, data)
		}
	}
}

// collectOperator writes the operator's Deployments, Pods and logs.
func collectOperator(ctx context.Context, e *env, o diagnosticsOptions, a *archive) {
	deployments := &appsv1.DeploymentList{}
	if _, err := listOperator(ctx, e.c, deployments, o.operatorNS); err != nil {
		a.fail("operator/deployments.yaml", err)
	} else {
		var items []client.Object
		for i := range deployments.Items {
			items = append(items, &deployments.Items[i])
		}
		addObjects(e, a, "operator/deployments.yaml", items)
	}
	pods := &corev1.PodList{}
	where, err := listOperator(ctx, e.c, pods, o.operatorNS)
	if err != nil {
		a.fail("operator/pods.yaml and the operator's logs", err)
		return
	}
	if len(pods.Items) == 0 {
		a.fail("operator/pods.yaml and the operator's logs", fmt.Errorf("no Pod labelled %s=raftsman in %s", etcdv1.NameLabel, where))
		return
	}
	var items []client.Object
	for i := range pods.Items {
		p := &pods.Items[i]
		collectLogs(ctx, e, p, "operator/logs/"+p.Namespace+"."+p.Name, o, a)
		items = append(items, p)
	}
	addObjects(e, a, "operator/pods.yaml", items)
}
