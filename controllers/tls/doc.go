// Package tls is the tls controller: it keeps each EtcdCluster's CA,
// certificates and root credentials in Secrets, turns etcd's authentication
// on and off, and reports both with the TLSReady and AuthReady conditions.
//
// Whatever the source of a certificate (the operator's CA, a Secret of the
// user, or cert-manager), members always mount the same operator-owned
// Secrets, whose names are in status.tls: the member Pods never depend on
// where a certificate came from, and a user's Secret is checked before any
// member sees it.
//
// Nothing needs cleaning up when a cluster is deleted: every Secret and
// Certificate it creates is owned by the EtcdCluster and garbage collected.
package tls
