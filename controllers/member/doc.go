// Package member is the member controller: it keeps the Pod and the PVC of
// one EtcdMember and reports whether the member is Ready. It creates the Pod
// only once the cluster controller says the member is Registered in etcd
// (an initial member of a cluster not formed yet, in the initial cluster by
// construction, starts before it has the condition), makes the first Pod in
// the pass that makes the PVC and records both in one status write, and
// never starts a member again on a volume that lost its data.
package member
