// Package undecodable is the undecodable controller: it reports, with a
// Warning event on the object, an EtcdCluster, EtcdMember or EtcdBackup the
// operator cannot decode (text an older CRD let through, an object stored
// past validation). The other controllers never see such an object
// (pkg/kube.Decodable): it is left alone until it is fixed or deleted, and
// every other object goes on being reconciled.
package undecodable
