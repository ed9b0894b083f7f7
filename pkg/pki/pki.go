// Package pki is the certificate authority the operator runs for each etcd
// cluster: it makes the CA, issues server, peer and client certificates from
// it, decides when a certificate is due for renewal, builds trust bundles for
// CA rotation, and checks the certificates users bring in Secrets.
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"time"
)

// clockSkew backdates NotBefore so that a certificate issued by the operator
// is already valid on an etcd node whose clock runs a little behind.
const clockSkew = 5 * time.Minute

const (
	pemCertificate = "CERTIFICATE"
	pemPrivateKey  = "PRIVATE KEY"
)

// errNoCertificate lets callers that know where the PEM came from say so in
// their own words.
var errNoCertificate = errors.New("no PEM certificate block found")

// KeyPair is a certificate and its private key, parsed and as PEM.
type KeyPair struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertPEM holds Cert followed by any intermediate certificates that came
	// with it, so that it can be served as a complete chain.
	CertPEM []byte
	KeyPEM  []byte // PKCS#8 "PRIVATE KEY"
}

// NewCA makes a self-signed CA: ECDSA P-256, IsCA, BasicConstraintsValid,
// MaxPathLenZero, KeyUsageCertSign|KeyUsageCRLSign|DigitalSignature, random
// 128-bit serial, SubjectKeyId, NotBefore = now-5m (clock skew),
// NotAfter = now+lifetime.
//
// The path length is zero because the CA only ever signs leaves: should it
// ever sign a CA certificate by mistake, verifiers still refuse whatever that
// one signs.
func NewCA(commonName string, lifetime time.Duration, now time.Time) (*KeyPair, error) {
	if commonName == "" {
		return nil, errors.New("CA common name is empty")
	}
	if lifetime <= 0 {
		return nil, fmt.Errorf("CA lifetime %v is not positive", lifetime)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	skid, err := subjectKeyID(key.Public())
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(lifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		SubjectKeyId:          skid,
	}
	kp, err := sign(tmpl, tmpl, key, key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA %q: %w", commonName, err)
	}
	return kp, nil
}

// ParseKeyPair reads PEM cert (first block is the leaf) and key (PKCS#8,
// PKCS#1 RSA or SEC1 EC accepted) and checks the key matches the
// certificate's public key.
//
// Certificates after the first are kept in CertPEM as the chain. KeyPEM is
// re-encoded as PKCS#8 whatever the input format, so that everything the
// operator writes back out is in one format.
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	certs, err := ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	key, err := parsePrivateKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	if !keyMatches(key, certs[0]) {
		return nil, errors.New("the private key does not match the certificate's public key")
	}
	return newKeyPair(certs, key)
}

// Usage of a leaf certificate.
type Usage int

const (
	// UsageServer asks for ServerAuth and ClientAuth: etcd's server dials
	// itself (the gRPC gateway) with its serving certificate, and that
	// connection fails client certificate authentication without ClientAuth.
	UsageServer Usage = iota
	// UsagePeer asks for ServerAuth and ClientAuth: every member both
	// accepts and opens peer connections with the same certificate.
	UsagePeer
	// UsageClient asks for ClientAuth only.
	UsageClient
)

func (u Usage) String() string {
	switch u {
	case UsageServer:
		return "server"
	case UsagePeer:
		return "peer"
	case UsageClient:
		return "client"
	}
	return fmt.Sprintf("Usage(%d)", int(u))
}

func (u Usage) valid() bool { return u >= UsageServer && u <= UsageClient }

// issuedExtKeyUsages is what Issue puts in a certificate of this usage.
func (u Usage) issuedExtKeyUsages() []x509.ExtKeyUsage {
	if u == UsageClient {
		return []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	return []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
}

// requiredExtKeyUsages is what a certificate brought by a user must allow.
// It is looser than issuedExtKeyUsages for servers: a user's serving
// certificate without ClientAuth still works when etcd does not require
// client certificates.
func (u Usage) requiredExtKeyUsages() []x509.ExtKeyUsage {
	switch u {
	case UsageServer:
		return []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	case UsagePeer:
		return []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	default:
		return []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
}

// Request is what a leaf certificate carries.
type Request struct {
	CommonName string
	DNSNames   []string
	IPs        []net.IP
	Usage      Usage
	Lifetime   time.Duration
}

func (r Request) validate() error {
	if !r.Usage.valid() {
		return fmt.Errorf("unknown certificate usage %v", r.Usage)
	}
	if r.Lifetime <= 0 {
		return fmt.Errorf("lifetime %v is not positive", r.Lifetime)
	}
	if slices.Contains(r.DNSNames, "") {
		return errors.New("empty DNS name")
	}
	for _, ip := range r.IPs {
		if ip.To16() == nil {
			return fmt.Errorf("invalid IP address %v", ip)
		}
	}
	// TLS clients ignore the common name when checking a server's identity,
	// so a serving certificate without SANs would be refused by every peer.
	if r.Usage != UsageClient && len(r.DNSNames) == 0 && len(r.IPs) == 0 {
		return fmt.Errorf("a %v certificate needs at least one DNS name or IP address", r.Usage)
	}
	// etcd takes the user name of a client certificate from its common name.
	if r.Usage == UsageClient && r.CommonName == "" {
		return errors.New("a client certificate needs a common name")
	}
	return nil
}

// Issue signs a new ECDSA P-256 leaf with the CA: KeyUsageDigitalSignature,
// ExtKeyUsage from Usage, AuthorityKeyId from the CA, NotBefore now-5m,
// NotAfter = min(now+Lifetime, ca.Cert.NotAfter) so a leaf never outlives its
// CA.
//
// KeyEncipherment is left out because it only means something for RSA key
// transport, which an EC key cannot do.
func Issue(ca *KeyPair, req Request, now time.Time) (*KeyPair, error) {
	if err := checkIssuer(ca, now); err != nil {
		return nil, err
	}
	if err := req.validate(); err != nil {
		return nil, fmt.Errorf("certificate request %q: %w", req.CommonName, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key for %q: %w", req.CommonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	skid, err := subjectKeyID(key.Public())
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(req.Lifetime)
	if ca.Cert.NotAfter.Before(notAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: req.CommonName},
		DNSNames:     slices.Clone(req.DNSNames),
		IPAddresses:  slices.Clone(req.IPs),
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  req.Usage.issuedExtKeyUsages(),
		// An explicit CA:FALSE keeps strict verifiers from having to guess.
		BasicConstraintsValid: true,
		SubjectKeyId:          skid,
		AuthorityKeyId:        ca.Cert.SubjectKeyId,
	}
	kp, err := sign(tmpl, ca.Cert, key, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("sign %v certificate %q: %w", req.Usage, req.CommonName, err)
	}
	return kp, nil
}

func checkIssuer(ca *KeyPair, now time.Time) error {
	if ca == nil || ca.Cert == nil || ca.Key == nil {
		return errors.New("CA certificate or key is missing")
	}
	name := describe(ca.Cert)
	if !ca.Cert.IsCA {
		return fmt.Errorf("certificate %q is not a CA", name)
	}
	if ca.Cert.KeyUsage != 0 && ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return fmt.Errorf("CA %q may not sign certificates", name)
	}
	if !now.Before(ca.Cert.NotAfter) {
		return fmt.Errorf("CA %q expired at %s", name, formatTime(ca.Cert.NotAfter))
	}
	return nil
}

// RenewAt is when a certificate should be replaced: renewBefore before
// NotAfter; when renewBefore is 0, at two thirds of its lifetime
// (NotBefore + 2/3 (NotAfter-NotBefore)).
//
// A renewBefore that is negative, or not shorter than the certificate's
// lifetime, also falls back to two thirds: honouring it would make every
// freshly issued certificate due at once and the operator would reissue in a
// loop, which happens for leaves clipped to a CA that is about to expire.
func RenewAt(cert *x509.Certificate, renewBefore time.Duration) time.Time {
	lifetime := cert.NotAfter.Sub(cert.NotBefore)
	if lifetime <= 0 {
		return cert.NotAfter
	}
	if renewBefore > 0 && renewBefore < lifetime {
		return cert.NotAfter.Add(-renewBefore)
	}
	// NotAfter - lifetime/3 rather than NotBefore + 2*lifetime/3: doubling a
	// long lifetime could overflow time.Duration.
	return cert.NotAfter.Add(-lifetime / 3)
}

// NeedsRenewal reports whether now is at or past RenewAt.
func NeedsRenewal(cert *x509.Certificate, renewBefore time.Duration, now time.Time) bool {
	return !now.Before(RenewAt(cert, renewBefore))
}

// ParseCertsPEM reads every CERTIFICATE block; error if none. Blocks of other
// types are skipped, so a file holding both a certificate and its key reads
// as the certificate.
func ParseCertsPEM(pemBytes []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for block, rest := pem.Decode(pemBytes); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != pemCertificate {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, errNoCertificate
	}
	return certs, nil
}

// Bundle concatenates CA certificates from several PEM inputs, dropping
// duplicates (same raw DER), keeping first-seen order; for a trust bundle
// holding an old and a new CA during a CA rotation.
//
// Empty inputs are skipped so that the caller can always pass the previous CA,
// which is nil outside a rotation. An input that is not empty but holds no
// certificate is an error: it is a damaged Secret, not an absent one.
func Bundle(pems ...[]byte) ([]byte, error) {
	seen := make(map[string]bool)
	var out bytes.Buffer
	for i, in := range pems {
		if len(bytes.TrimSpace(in)) == 0 {
			continue
		}
		certs, err := ParseCertsPEM(in)
		if err != nil {
			return nil, fmt.Errorf("bundle input %d: %w", i+1, err)
		}
		for _, c := range certs {
			if seen[string(c.Raw)] {
				continue
			}
			seen[string(c.Raw)] = true
			if err := pem.Encode(&out, &pem.Block{Type: pemCertificate, Bytes: c.Raw}); err != nil {
				return nil, fmt.Errorf("encode bundle: %w", err)
			}
		}
	}
	if out.Len() == 0 {
		return nil, errors.New("no certificates to bundle")
	}
	return out.Bytes(), nil
}

// sign creates the certificate for key from tmpl, signed by signer as parent.
func sign(tmpl, parent *x509.Certificate, key, signer crypto.Signer) (*KeyPair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse the new certificate: %w", err)
	}
	return newKeyPair([]*x509.Certificate{cert}, key)
}

func newKeyPair(chain []*x509.Certificate, key crypto.Signer) (*KeyPair, error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	var certPEM []byte
	for _, c := range chain {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: c.Raw})...)
	}
	return &KeyPair{
		Cert:    chain[0],
		Key:     key,
		CertPEM: certPEM,
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: keyDER}),
	}, nil
}

// newSerial returns a random positive 128-bit serial number. Random serials
// keep two certificates from ever sharing an issuer and serial, even across
// operator restarts, without any state to persist.
func newSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("generate serial number: %w", err)
		}
		// RFC 5280 requires a positive serial; zero is merely astronomically
		// unlikely.
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

// subjectKeyID follows RFC 7093 section 2 method 1: the leftmost 160 bits of
// the SHA-256 of the subjectPublicKey bits. Leaves get one too, which
// x509.CreateCertificate would only add for CAs.
func subjectKeyID(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	var spki struct {
		Algorithm        pkix.AlgorithmIdentifier
		SubjectPublicKey asn1.BitString
	}
	if _, err := asn1.Unmarshal(der, &spki); err != nil {
		return nil, fmt.Errorf("decode public key: %w", err)
	}
	sum := sha256.Sum256(spki.SubjectPublicKey.Bytes)
	return sum[:20], nil
}

var (
	errNoPrivateKey  = errors.New("no PEM private key block found")
	errEncryptedKey  = errors.New("the private key is encrypted")
	errNotSigningKey = errors.New("the private key cannot sign")
)

// parsePrivateKey reads the first private key block of keyPEM. Other blocks
// are skipped because `openssl ecparam -genkey` writes an "EC PARAMETERS"
// block before the key.
func parsePrivateKey(keyPEM []byte) (crypto.Signer, error) {
	for block, rest := pem.Decode(keyPEM); block != nil; block, rest = pem.Decode(rest) {
		if block.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(block.Headers["Proc-Type"], "ENCRYPTED") {
			return nil, errEncryptedKey
		}
		if !strings.HasSuffix(block.Type, pemPrivateKey) {
			continue
		}
		return parseKeyDER(block)
	}
	return nil, errNoPrivateKey
}

// keyParsers are the private key encodings accepted, by PEM label.
var keyParsers = []struct {
	label, format string
	parse         func([]byte) (any, error)
}{
	{"PRIVATE KEY", "PKCS#8 key", x509.ParsePKCS8PrivateKey},
	{"RSA PRIVATE KEY", "PKCS#1 RSA key", func(der []byte) (any, error) { return x509.ParsePKCS1PrivateKey(der) }},
	{"EC PRIVATE KEY", "SEC1 EC key", func(der []byte) (any, error) { return x509.ParseECPrivateKey(der) }},
}

// parseKeyDER tries every accepted encoding, as crypto/tls does, because PEM
// labels are not always honest; the label only picks which failure to report.
func parseKeyDER(block *pem.Block) (crypto.Signer, error) {
	var reported error
	for i, p := range keyParsers {
		key, err := p.parse(block.Bytes)
		if err != nil {
			if i == 0 || p.label == block.Type {
				reported = fmt.Errorf("%s: %w", p.format, err)
			}
			continue
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("%w: unsupported key type %T", errNotSigningKey, key)
		}
		return signer, nil
	}
	return nil, reported
}

func keyMatches(key crypto.Signer, cert *x509.Certificate) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}

// describe names a certificate for a message: its common name, or its whole
// subject when it has none.
func describe(c *x509.Certificate) string {
	if c.Subject.CommonName != "" {
		return c.Subject.CommonName
	}
	if s := c.Subject.String(); s != "" {
		return s
	}
	return "serial " + c.SerialNumber.Text(16)
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
