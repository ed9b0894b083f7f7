// Package cluster is the cluster controller: the membership state machine of
// an EtcdCluster, its Services and its PodDisruptionBudget.
//
// Every membership change goes through etcd's Membership API, one member at
// a time. A brand-new cluster starts all its initial members at once as a
// static bootstrap; every later member is added as a learner before its Pod
// exists, promoted once etcd says it is in sync, and removed from etcd before
// its EtcdMember (and so its Pod and PVC) goes. The intent of each change is
// persisted in Kubernetes before the etcd call: an EtcdMember without a
// member ID is a member to add, an EtcdMember being deleted is a member to
// remove. A crash between the call and the status write is recognised on
// the next pass from etcd's own member list.
package cluster
