// Package user is the user controller: it keeps each EtcdUser as a user of
// its cluster's etcd with one role of its own (raftsman-user-<name>), whose
// permissions are the key prefixes of the spec, and the user's credentials
// in a Secret: a client certificate of the cluster's CA with the user's
// name as common name, the CA of the members' serving certificate, and a
// password when asked. It reports both with the EtcdUser's Ready condition.
//
// It reads the cluster only through the tls controller's conditions
// (TLSSecrets, AuthOn): it changes etcd's users only while AuthReady says
// authentication is on for the cluster's current generation, and connects
// with the operator's own client certificate, named in status.tls.
//
// Authentication is never turned on for a user: an EtcdUser of a cluster
// with spec.auth.enabled false stays Ready False (AuthDisabled) until the
// cluster's owner turns it on, since doing so makes etcd refuse every
// client that has no user of its own, which only the cluster's owner can
// decide.
//
// Deleting an EtcdUser deletes the user and its role in etcd (a finalizer
// holds it until then); its Secret, which it owns, goes with it. A
// certificate issued to the user stays valid until it expires, as etcd
// checks no revocation list, but etcd refuses it every key once the user
// is gone: its common name names no user.
package user
