package plugin

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
)

func membersCommand(run runner) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "members CLUSTER",
		Short: "etcd's member list joined with the EtcdMembers: name, ID, role, leader, peer URL, Pod, health",
		Long: `etcd's member list, asked of a Ready member through a port-forward, joined with the
cluster's EtcdMembers and their Pods by member ID (or name). A member etcd has and the
operator has no EtcdMember for, or an EtcdMember etcd does not list (yet, or any more), is
shown with a note: the operator adds and removes members one at a time, so such a row is
normal while it changes the cluster (status says what it does). HEALTHY is the operator's
last word on the member (status.members). Read-only.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			return exactArgs("CLUSTER")(cmd, args)
		},
		RunE: run(func(ctx context.Context, e *env, args []string) error {
			rows, note, err := collectMembers(ctx, e, args[0])
			if err != nil {
				return err
			}
			if output != "" {
				if note != "" {
					fmt.Fprintln(e.streams.ErrOut, "note: etcd's member list: "+note)
				}
				return writeStructured(e.streams.Out, output, rows)
			}
			renderMembersList(e.streams.Out, rows, note)
			return nil
		}),
	}
	addOutput(cmd, &output)
	return cmd
}

// memberListRow is one member of members; its fields are kept from
// release to release in members -o json|yaml.
type memberListRow struct {
	Name    string `json:"name"`
	ID      string `json:"id,omitempty"`
	Role    string `json:"role,omitempty"`
	Leader  bool   `json:"leader"`
	PeerURL string `json:"peerURL,omitempty"`
	Pod     string `json:"pod"`
	Healthy bool   `json:"healthy"`
	// InEtcd: etcd's member list has it; EtcdMember: the operator has an
	// EtcdMember for it.
	InEtcd     bool   `json:"inEtcd"`
	EtcdMember bool   `json:"etcdMember"`
	Note       string `json:"note,omitempty"`
}

// collectMembers joins etcd's member list with the EtcdMembers and Pods;
// note says why etcd's list is missing, when it is.
func collectMembers(ctx context.Context, e *env, name string) ([]memberListRow, string, error) {
	c, err := e.getCluster(ctx, name)
	if err != nil {
		return nil, "", err
	}
	members := &etcdv1.EtcdMemberList{}
	if err := e.c.List(ctx, members, kube.OfCluster(c.Namespace, c.Name)...); err != nil {
		return nil, "", fmt.Errorf("list etcdmembers: %w", err)
	}
	pods := &corev1.PodList{}
	if err := e.c.List(ctx, pods, kube.OfCluster(c.Namespace, c.Name)...); err != nil {
		return nil, "", fmt.Errorf("list pods: %w", err)
	}
	list, leader, note := etcdMemberList(ctx, e, c)
	rows := joinMembers(c, list, leader, members.Items, pods.Items)
	return rows, note, nil
}

// etcdMemberList asks the Ready members in turn for the member list and
// the leader, until one answers.
func etcdMemberList(ctx context.Context, e *env, c *etcdv1.EtcdCluster) ([]listedMember, uint64, string) {
	pods, err := targetPods(ctx, e.c, c, "")
	if err != nil {
		return nil, 0, "etcd not asked: " + err.Error()
	}
	access, err := e.etcd(ctx, c)
	if err != nil {
		return nil, 0, "etcd not asked: " + err.Error()
	}
	var errs []string
	for _, pod := range pods {
		list, err := access.MemberList(ctx, pod)
		if err != nil {
			errs = append(errs, pod+": "+err.Error())
			continue
		}
		var leader uint64
		if st, err := access.Status(ctx, pod); err == nil {
			leader = st.Leader
		}
		return list, leader, ""
	}
	return nil, 0, "no member answered: " + strings.Join(errs, "; ")
}

// joinMembers is a row per member etcd lists, by ID (or name) with its
// EtcdMember, then a row per EtcdMember etcd does not list.
func joinMembers(c *etcdv1.EtcdCluster, list []listedMember, leader uint64, members []etcdv1.EtcdMember, pods []corev1.Pod) []memberListRow {
	podOf := map[string]string{}
	for i := range pods {
		if m := pods[i].Labels[etcdv1.MemberLabel]; m != "" {
			podOf[m] = podState(&pods[i])
		}
	}
	healthy := map[string]bool{}
	for _, m := range c.Status.Members {
		healthy[m.Name] = m.Healthy
	}
	used := map[string]bool{}
	var rows []memberListRow
	for _, em := range list {
		id := etcd.FormatID(em.ID)
		i := slices.IndexFunc(members, func(m etcdv1.EtcdMember) bool {
			return m.Status.MemberID == id || (m.Status.MemberID == "" && em.Name != "" && m.Name == em.Name)
		})
		r := memberListRow{Name: em.Name, ID: id, Role: string(etcdv1.RoleVoter), Leader: em.ID == leader, InEtcd: true}
		if em.IsLearner {
			r.Role = string(etcdv1.RoleLearner)
		}
		if len(em.PeerURLs) > 0 {
			r.PeerURL = em.PeerURLs[0]
		}
		if i >= 0 {
			r.Name, r.EtcdMember, used[members[i].Name] = members[i].Name, true, true
		} else {
			r.Note = "no EtcdMember: not the operator's, or being removed"
		}
		if r.Name == "" {
			r.Name = "(unstarted)"
		}
		r.Pod, r.Healthy = orNone(podOf[r.Name]), healthy[r.Name]
		rows = append(rows, r)
	}
	for _, m := range members {
		if used[m.Name] {
			continue
		}
		r := memberListRow{Name: m.Name, ID: m.Status.MemberID, Role: string(m.Status.Role), PeerURL: m.Spec.PeerURL,
			Pod: orNone(podOf[m.Name]), Healthy: healthy[m.Name], EtcdMember: true}
		if list != nil {
			r.Note = "not in etcd's member list: being added, or removed"
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b memberListRow) int { return strings.Compare(a.Name, b.Name) })
	return rows
}

func orNone(s string) string {
	if s == "" {
		return podNone
	}
	return s
}

// renderMembersList prints a row per member, then the notes.
func renderMembersList(out io.Writer, rows []memberListRow, note string) {
	w := newTable(out)
	fmt.Fprintln(w, "NAME\tID\tROLE\tLEADER\tPEER URL\tPOD\tHEALTHY")
	var notes []string
	for _, r := range rows {
		leader := ""
		if r.Leader {
			leader = "*"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, orDash(r.ID), orDash(r.Role), leader, orDash(r.PeerURL), r.Pod, yesNo(r.Healthy))
		if r.Note != "" {
			notes = append(notes, r.Name+": "+r.Note)
		}
	}
	_ = w.Flush()
	if note != "" {
		notes = append(notes, "etcd's member list: "+note+"; the rows are the EtcdMembers alone")
	}
	for _, n := range notes {
		fmt.Fprintln(out, "  "+n)
	}
}
