// Package member is the member controller: it keeps the Pod and the PVC of
// one EtcdMember and reports whether the member is Ready. It creates the Pod
// only once the cluster controller says the member is Registered in etcd,
// and never starts a member again on a volume that lost its data.
package member
