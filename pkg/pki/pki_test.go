package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// testNow is the fixed clock of every test. It has no sub-second part
// because certificates store whole seconds.
var testNow = time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)

const (
	day  = 24 * time.Hour
	year = 365 * day
)

func mustCA(t *testing.T, cn string, lifetime time.Duration, at time.Time) *KeyPair {
	t.Helper()
	ca, err := NewCA(cn, lifetime, at)
	if err != nil {
		t.Fatalf("NewCA(%q): %v", cn, err)
	}
	return ca
}

func mustIssue(t *testing.T, ca *KeyPair, req Request, at time.Time) *KeyPair {
	t.Helper()
	kp, err := Issue(ca, req, at)
	if err != nil {
		t.Fatalf("Issue(%q): %v", req.CommonName, err)
	}
	return kp
}

// mustSign makes a certificate from a hand-written template, for the shapes
// NewCA and Issue refuse to make. A nil parent self-signs.
func mustSign(t *testing.T, tmpl *x509.Certificate, parent *KeyPair) *KeyPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SerialNumber == nil {
		if tmpl.SerialNumber, err = newSerial(); err != nil {
			t.Fatal(err)
		}
	}
	parentCert, signer := tmpl, crypto.Signer(key)
	if parent != nil {
		parentCert, signer = parent.Cert, parent.Key
	}
	kp, err := sign(tmpl, parentCert, key, signer)
	if err != nil {
		t.Fatalf("sign %q: %v", tmpl.Subject.CommonName, err)
	}
	return kp
}

func verifyLeaf(leaf *x509.Certificate, rootsPEM []byte, host string, eku x509.ExtKeyUsage, at time.Time) error {
	roots := x509.NewCertPool()
	for _, c := range mustParse(rootsPEM) {
		roots.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots:       roots,
		DNSName:     host,
		CurrentTime: at,
		KeyUsages:   []x509.ExtKeyUsage{eku},
	})
	return err
}

func mustParse(b []byte) []*x509.Certificate {
	certs, err := ParseCertsPEM(b)
	if err != nil {
		panic(err)
	}
	return certs
}

func TestNewCA(t *testing.T) {
	t.Parallel()
	ca := mustCA(t, "example-ca", 10*year, testNow)
	c := ca.Cert

	if c.Subject.CommonName != "example-ca" {
		t.Errorf("CommonName = %q", c.Subject.CommonName)
	}
	if !c.IsCA || !c.BasicConstraintsValid {
		t.Errorf("IsCA = %v, BasicConstraintsValid = %v, want both true", c.IsCA, c.BasicConstraintsValid)
	}
	if c.MaxPathLen != 0 || !c.MaxPathLenZero {
		t.Errorf("MaxPathLen = %d, MaxPathLenZero = %v, want 0 and true", c.MaxPathLen, c.MaxPathLenZero)
	}
	wantKU := x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	if c.KeyUsage != wantKU {
		t.Errorf("KeyUsage = %v, want %v", c.KeyUsage, wantKU)
	}
	if bl := c.SerialNumber.BitLen(); c.SerialNumber.Sign() <= 0 || bl > 128 || bl < 64 {
		t.Errorf("serial %v: want positive and at most 128 bits (got %d bits)", c.SerialNumber, bl)
	}
	wantSKID, err := subjectKeyID(ca.Key.Public())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.SubjectKeyId, wantSKID) {
		t.Errorf("SubjectKeyId = %x, want %x", c.SubjectKeyId, wantSKID)
	}
	if want := testNow.Add(-5 * time.Minute); !c.NotBefore.Equal(want) {
		t.Errorf("NotBefore = %v, want %v", c.NotBefore, want)
	}
	if want := testNow.Add(10 * year); !c.NotAfter.Equal(want) {
		t.Errorf("NotAfter = %v, want %v", c.NotAfter, want)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	pub, ok := c.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key %T, want ECDSA P-256", c.PublicKey)
	}
	if block, _ := pem.Decode(ca.KeyPEM); block == nil || block.Type != "PRIVATE KEY" {
		t.Errorf("KeyPEM is not a PKCS#8 PRIVATE KEY block")
	}

	back, err := ParseKeyPair(ca.CertPEM, ca.KeyPEM)
	if err != nil {
		t.Fatalf("ParseKeyPair of NewCA output: %v", err)
	}
	if !back.Cert.Equal(c) {
		t.Error("round trip changed the certificate")
	}

	other := mustCA(t, "example-ca", 10*year, testNow)
	if other.Cert.SerialNumber.Cmp(c.SerialNumber) == 0 {
		t.Error("two CAs share a serial number")
	}
}

func TestNewCAErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cn       string
		lifetime time.Duration
	}{
		{"empty common name", "", year},
		{"zero lifetime", "ca", 0},
		{"negative lifetime", "ca", -time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := NewCA(tt.cn, tt.lifetime, testNow); err == nil {
				t.Error("NewCA succeeded, want an error")
			}
		})
	}
}

func TestIssue(t *testing.T) {
	t.Parallel()
	ca := mustCA(t, "c-ca", 10*year, testNow)
	tests := []struct {
		name       string
		req        Request
		wantEKU    []x509.ExtKeyUsage
		hosts      []string // each must verify
		wrongHosts []string // each must not
	}{
		{
			name: "server",
			req: Request{
				CommonName: "c-server",
				DNSNames:   []string{"c.ns.svc", "c.ns.svc.cluster.local", "*.c-peer.ns.svc.cluster.local"},
				IPs:        []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
				Usage:      UsageServer,
				Lifetime:   90 * day,
			},
			wantEKU:    []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			hosts:      []string{"c.ns.svc", "c-0.c-peer.ns.svc.cluster.local", "127.0.0.1", "::1"},
			wrongHosts: []string{"c.other.svc", "10.0.0.1"},
		},
		{
			name: "peer wildcard",
			req: Request{
				CommonName: "c-peer",
				DNSNames:   []string{"*.c-peer.ns.svc.cluster.local"},
				Usage:      UsagePeer,
				Lifetime:   90 * day,
			},
			wantEKU: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			hosts:   []string{"c-0.c-peer.ns.svc.cluster.local", "c-2.c-peer.ns.svc.cluster.local"},
			// A wildcard stands for exactly one label.
			wrongHosts: []string{"c-peer.ns.svc.cluster.local", "a.c-0.c-peer.ns.svc.cluster.local", "c-0.d-peer.ns.svc.cluster.local"},
		},
		{
			name:    "client",
			req:     Request{CommonName: "root", Usage: UsageClient, Lifetime: 30 * day},
			wantEKU: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kp := mustIssue(t, ca, tt.req, testNow)
			c := kp.Cert

			if c.Subject.CommonName != tt.req.CommonName {
				t.Errorf("CommonName = %q, want %q", c.Subject.CommonName, tt.req.CommonName)
			}
			if !slices.Equal(c.DNSNames, tt.req.DNSNames) {
				t.Errorf("DNSNames = %v, want %v", c.DNSNames, tt.req.DNSNames)
			}
			if !slices.EqualFunc(c.IPAddresses, tt.req.IPs, net.IP.Equal) {
				t.Errorf("IPAddresses = %v, want %v", c.IPAddresses, tt.req.IPs)
			}
			if c.KeyUsage != x509.KeyUsageDigitalSignature {
				t.Errorf("KeyUsage = %v, want DigitalSignature only", c.KeyUsage)
			}
			if !slices.Equal(c.ExtKeyUsage, tt.wantEKU) {
				t.Errorf("ExtKeyUsage = %v, want %v", c.ExtKeyUsage, tt.wantEKU)
			}
			if c.IsCA {
				t.Error("leaf is a CA")
			}
			if !bytes.Equal(c.AuthorityKeyId, ca.Cert.SubjectKeyId) {
				t.Errorf("AuthorityKeyId = %x, want the CA's SubjectKeyId %x", c.AuthorityKeyId, ca.Cert.SubjectKeyId)
			}
			if len(c.SubjectKeyId) == 0 {
				t.Error("leaf has no SubjectKeyId")
			}
			if want := testNow.Add(-5 * time.Minute); !c.NotBefore.Equal(want) {
				t.Errorf("NotBefore = %v, want %v", c.NotBefore, want)
			}
			if want := testNow.Add(tt.req.Lifetime); !c.NotAfter.Equal(want) {
				t.Errorf("NotAfter = %v, want %v", c.NotAfter, want)
			}
			if pub, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
				t.Errorf("public key %T, want ECDSA P-256", c.PublicKey)
			}
			if !keyMatches(kp.Key, c) {
				t.Error("Key does not match Cert")
			}

			for _, eku := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
				err := verifyLeaf(c, ca.CertPEM, "", eku, testNow)
				if want := slices.Contains(tt.wantEKU, eku); (err == nil) != want {
					t.Errorf("verify for %s: err = %v, want success %v", extKeyUsageName(eku), err, want)
				}
			}
			for _, h := range tt.hosts {
				if err := verifyLeaf(c, ca.CertPEM, h, tt.wantEKU[0], testNow); err != nil {
					t.Errorf("verify for host %s: %v", h, err)
				}
			}
			for _, h := range tt.wrongHosts {
				if err := verifyLeaf(c, ca.CertPEM, h, tt.wantEKU[0], testNow); err == nil {
					t.Errorf("verify for host %s succeeded, want a failure", h)
				}
			}
			if err := verifyLeaf(c, mustCA(t, "other-ca", year, testNow).CertPEM, "", tt.wantEKU[0], testNow); err == nil {
				t.Error("leaf verifies against an unrelated CA")
			}
		})
	}
}

func TestIssueNeverOutlivesCA(t *testing.T) {
	t.Parallel()
	ca := mustCA(t, "short-ca", 30*day, testNow)
	tests := []struct {
		name     string
		lifetime time.Duration
		want     time.Time
	}{
		{"shorter than the CA", 7 * day, testNow.Add(7 * day)},
		{"as long as the CA", 30 * day, testNow.Add(30 * day)},
		{"longer than the CA", year, ca.Cert.NotAfter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kp := mustIssue(t, ca, Request{CommonName: "u", Usage: UsageClient, Lifetime: tt.lifetime}, testNow)
			if !kp.Cert.NotAfter.Equal(tt.want) {
				t.Errorf("NotAfter = %v, want %v", kp.Cert.NotAfter, tt.want)
			}
			if kp.Cert.NotAfter.After(ca.Cert.NotAfter) {
				t.Error("leaf outlives its CA")
			}
		})
	}
}

func TestIssueErrors(t *testing.T) {
	t.Parallel()
	ca := mustCA(t, "ca", year, testNow)
	leaf := mustIssue(t, ca, Request{CommonName: "u", Usage: UsageClient, Lifetime: day}, testNow)
	cannotSign := mustSign(t, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "no-cert-sign"},
		NotBefore:             testNow,
		NotAfter:              testNow.Add(year),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
	}, nil)
	good := Request{CommonName: "s", DNSNames: []string{"s.ns.svc"}, Usage: UsageServer, Lifetime: day}
	with := func(f func(*Request)) Request {
		r := good
		f(&r)
		return r
	}
	tests := []struct {
		name string
		ca   *KeyPair
		req  Request
		at   time.Time
	}{
		{"nil CA", nil, good, testNow},
		{"CA without key", &KeyPair{Cert: ca.Cert}, good, testNow},
		{"issuer is not a CA", leaf, good, testNow},
		{"CA key does not match", &KeyPair{Cert: ca.Cert, Key: leaf.Key}, good, testNow},
		{"CA expired", ca, good, testNow.Add(2 * year)},
		{"CA may not sign certificates", cannotSign, good, testNow},
		{"zero lifetime", ca, with(func(r *Request) { r.Lifetime = 0 }), testNow},
		{"unknown usage", ca, with(func(r *Request) { r.Usage = Usage(7) }), testNow},
		{"server without SANs", ca, with(func(r *Request) { r.DNSNames = nil }), testNow},
		{"peer without SANs", ca, with(func(r *Request) { r.DNSNames, r.Usage = nil, UsagePeer }), testNow},
		{"client without common name", ca, with(func(r *Request) { r.CommonName, r.Usage = "", UsageClient }), testNow},
		{"empty DNS name", ca, with(func(r *Request) { r.DNSNames = []string{"a", ""} }), testNow},
		{"malformed IP", ca, with(func(r *Request) { r.IPs = []net.IP{{1, 2, 3}} }), testNow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if kp, err := Issue(tt.ca, tt.req, tt.at); err == nil {
				t.Errorf("Issue succeeded (NotAfter %v), want an error", kp.Cert.NotAfter)
			}
		})
	}
}

func TestUsageString(t *testing.T) {
	t.Parallel()
	for u, want := range map[Usage]string{UsageServer: "server", UsagePeer: "peer", UsageClient: "client", Usage(9): "Usage(9)"} {
		if got := u.String(); got != want {
			t.Errorf("Usage(%d).String() = %q, want %q", int(u), got, want)
		}
	}
}

func TestParseKeyPair(t *testing.T) {
	t.Parallel()
	ca := mustCA(t, "ca", year, testNow)
	ecLeaf := mustIssue(t, ca, Request{CommonName: "u", Usage: UsageClient, Lifetime: day}, testNow)
	other := mustIssue(t, ca, Request{CommonName: "v", Usage: UsageClient, Lifetime: day}, testNow)

	ecKey := ecLeaf.Key.(*ecdsa.PrivateKey)
	sec1DER, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	sec1PEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1DER})
	// What `openssl ecparam -genkey` writes.
	withParams := append(pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07}}), sec1PEM...)

	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := newSerial()
	if err != nil {
		t.Fatal(err)
	}
	rsaDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "rsa"},
		NotBefore:    testNow,
		NotAfter:     testNow.Add(day),
	}, ca.Cert, rsaKey.Public(), ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	rsaCertPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rsaDER})
	pkcs1PEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})

	encrypted := pem.EncodeToMemory(&pem.Block{
		Type:    "EC PRIVATE KEY",
		Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00000000000000000000000000000000"},
		Bytes:   []byte{1, 2, 3},
	})

	tests := []struct {
		name      string
		cert, key []byte
		wantErr   bool
		wantCN    string
		wantCerts int
	}{
		{name: "PKCS#8", cert: ecLeaf.CertPEM, key: ecLeaf.KeyPEM, wantCN: "u", wantCerts: 1},
		{name: "SEC1", cert: ecLeaf.CertPEM, key: sec1PEM, wantCN: "u", wantCerts: 1},
		{name: "SEC1 after EC PARAMETERS", cert: ecLeaf.CertPEM, key: withParams, wantCN: "u", wantCerts: 1},
		{name: "PKCS#1 RSA", cert: rsaCertPEM, key: pkcs1PEM, wantCN: "rsa", wantCerts: 1},
		{name: "chain keeps intermediates", cert: append(slices.Clone(ecLeaf.CertPEM), ca.CertPEM...), key: ecLeaf.KeyPEM, wantCN: "u", wantCerts: 2},
		{name: "key and certificate in one file", cert: append(slices.Clone(ecLeaf.KeyPEM), ecLeaf.CertPEM...), key: ecLeaf.KeyPEM, wantCN: "u", wantCerts: 1},
		{name: "mismatched key", cert: ecLeaf.CertPEM, key: other.KeyPEM, wantErr: true},
		{name: "RSA certificate with EC key", cert: rsaCertPEM, key: ecLeaf.KeyPEM, wantErr: true},
		{name: "no key", cert: ecLeaf.CertPEM, key: ecLeaf.CertPEM, wantErr: true},
		{name: "garbage key", cert: ecLeaf.CertPEM, key: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("junk")}), wantErr: true},
		{name: "encrypted key", cert: ecLeaf.CertPEM, key: encrypted, wantErr: true},
		{name: "no certificate", cert: []byte("hello"), key: ecLeaf.KeyPEM, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kp, err := ParseKeyPair(tt.cert, tt.key)
			if tt.wantErr {
				if err == nil {
					t.Fatal("ParseKeyPair succeeded, want an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseKeyPair: %v", err)
			}
			if kp.Cert.Subject.CommonName != tt.wantCN {
				t.Errorf("leaf CommonName = %q, want %q", kp.Cert.Subject.CommonName, tt.wantCN)
			}
			if got := len(mustParse(kp.CertPEM)); got != tt.wantCerts {
				t.Errorf("CertPEM holds %d certificates, want %d", got, tt.wantCerts)
			}
			if bytes.Contains(kp.CertPEM, []byte("PRIVATE KEY")) {
				t.Error("CertPEM holds a private key")
			}
			block, _ := pem.Decode(kp.KeyPEM)
			if block == nil || block.Type != "PRIVATE KEY" {
				t.Fatal("KeyPEM is not a PKCS#8 PRIVATE KEY block")
			}
			if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
				t.Errorf("KeyPEM: %v", err)
			}
			if !keyMatches(kp.Key, kp.Cert) {
				t.Error("Key does not match Cert")
			}
		})
	}
}

func TestRenewAt(t *testing.T) {
	t.Parallel()
	t0 := testNow
	cert := &x509.Certificate{NotBefore: t0, NotAfter: t0.Add(90 * time.Hour)}
	issued := mustIssue(t, mustCA(t, "ca", year, testNow), Request{CommonName: "u", Usage: UsageClient, Lifetime: 90 * day}, testNow).Cert
	tests := []struct {
		name        string
		cert        *x509.Certificate
		renewBefore time.Duration
		want        time.Time
	}{
		{"default two thirds", cert, 0, t0.Add(60 * time.Hour)},
		{"explicit renewBefore", cert, 24 * time.Hour, t0.Add(66 * time.Hour)},
		{"renewBefore just under the lifetime", cert, 89 * time.Hour, t0.Add(time.Hour)},
		{"renewBefore equal to the lifetime falls back", cert, 90 * time.Hour, t0.Add(60 * time.Hour)},
		{"renewBefore longer than the lifetime falls back", cert, 200 * time.Hour, t0.Add(60 * time.Hour)},
		{"negative renewBefore falls back", cert, -time.Hour, t0.Add(60 * time.Hour)},
		// The backdated five minutes count as lifetime.
		{"never valid", &x509.Certificate{NotBefore: t0, NotAfter: t0.Add(-time.Hour)}, 0, t0.Add(-time.Hour)},
		{"issued certificate", issued, 0, testNow.Add(-5 * time.Minute).Add((90*day + 5*time.Minute) * 2 / 3)},
		{"issued certificate with renewBefore", issued, 30 * day, testNow.Add(60 * day)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := RenewAt(tt.cert, tt.renewBefore); !got.Equal(tt.want) {
				t.Errorf("RenewAt(%v) = %v, want %v", tt.renewBefore, got, tt.want)
			}
		})
	}
}

func TestNeedsRenewal(t *testing.T) {
	t.Parallel()
	cert := &x509.Certificate{NotBefore: testNow, NotAfter: testNow.Add(90 * time.Hour)}
	renewAt := testNow.Add(60 * time.Hour)
	tests := []struct {
		name        string
		renewBefore time.Duration
		at          time.Time
		want        bool
	}{
		{"fresh", 0, testNow, false},
		{"a nanosecond before", 0, renewAt.Add(-time.Nanosecond), false},
		{"exactly at", 0, renewAt, true},
		{"after", 0, renewAt.Add(time.Second), true},
		{"expired", 0, testNow.Add(100 * time.Hour), true},
		{"explicit, just before", 10 * time.Hour, testNow.Add(80*time.Hour - time.Nanosecond), false},
		{"explicit, exactly at", 10 * time.Hour, testNow.Add(80 * time.Hour), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := NeedsRenewal(cert, tt.renewBefore, tt.at); got != tt.want {
				t.Errorf("NeedsRenewal(%v, %v) = %v, want %v", tt.renewBefore, tt.at, got, tt.want)
			}
		})
	}
}

func TestParseCertsPEM(t *testing.T) {
	t.Parallel()
	a := mustCA(t, "a", year, testNow)
	b := mustCA(t, "b", year, testNow)
	badDER := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")})
	tests := []struct {
		name    string
		in      []byte
		wantCNs []string // nil: want an error
	}{
		{"one", a.CertPEM, []string{"a"}},
		{"two in order", append(slices.Clone(b.CertPEM), a.CertPEM...), []string{"b", "a"}},
		{"other blocks and text skipped", append(append([]byte("comment\n"), a.KeyPEM...), a.CertPEM...), []string{"a"}},
		{"empty", nil, nil},
		{"not PEM", []byte("not pem at all"), nil},
		{"only a key", a.KeyPEM, nil},
		{"bad DER", append(slices.Clone(a.CertPEM), badDER...), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			certs, err := ParseCertsPEM(tt.in)
			if tt.wantCNs == nil {
				if err == nil {
					t.Fatalf("ParseCertsPEM succeeded with %d certificates, want an error", len(certs))
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseCertsPEM: %v", err)
			}
			if got := commonNames(certs); !slices.Equal(got, tt.wantCNs) {
				t.Errorf("got %v, want %v", got, tt.wantCNs)
			}
		})
	}
}

func commonNames(certs []*x509.Certificate) []string {
	var cns []string
	for _, c := range certs {
		cns = append(cns, c.Subject.CommonName)
	}
	return cns
}

func TestBundle(t *testing.T) {
	t.Parallel()
	oldCA := mustCA(t, "old", year, testNow)
	newCA := mustCA(t, "new", year, testNow)
	third := mustCA(t, "third", year, testNow)
	both := append(slices.Clone(oldCA.CertPEM), newCA.CertPEM...)
	tests := []struct {
		name    string
		in      [][]byte
		wantCNs []string // nil: want an error
	}{
		{"single", [][]byte{newCA.CertPEM}, []string{"new"}},
		{"old and new", [][]byte{oldCA.CertPEM, newCA.CertPEM}, []string{"old", "new"}},
		{"order is first seen", [][]byte{newCA.CertPEM, oldCA.CertPEM}, []string{"new", "old"}},
		{"duplicates across inputs", [][]byte{newCA.CertPEM, both, newCA.CertPEM}, []string{"new", "old"}},
		{"duplicates within an input", [][]byte{append(slices.Clone(both), both...), third.CertPEM}, []string{"old", "new", "third"}},
		{"empty inputs skipped", [][]byte{nil, newCA.CertPEM, []byte("\n")}, []string{"new"}},
		{"nothing", nil, nil},
		{"only empty inputs", [][]byte{nil, {}}, nil},
		{"damaged input", [][]byte{newCA.CertPEM, []byte("garbage")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := Bundle(tt.in...)
			if tt.wantCNs == nil {
				if err == nil {
					t.Fatal("Bundle succeeded, want an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Bundle: %v", err)
			}
			if got := commonNames(mustParse(out)); !slices.Equal(got, tt.wantCNs) {
				t.Errorf("bundle holds %v, want %v", got, tt.wantCNs)
			}
			if n := strings.Count(string(out), "-----BEGIN "); n != len(tt.wantCNs) {
				t.Errorf("bundle has %d PEM blocks, want %d", n, len(tt.wantCNs))
			}
		})
	}
}

// During a CA rotation members carry leaves of either CA, and the bundle must
// let each side trust the other.
func TestBundleTrustsBothCAs(t *testing.T) {
	t.Parallel()
	oldCA := mustCA(t, "old", year, testNow)
	newCA := mustCA(t, "new", year, testNow)
	bundle, err := Bundle(oldCA.CertPEM, newCA.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	req := Request{CommonName: "peer", DNSNames: []string{"*.c-peer.ns.svc.cluster.local"}, Usage: UsagePeer, Lifetime: 90 * day}
	for _, ca := range []*KeyPair{oldCA, newCA} {
		leaf := mustIssue(t, ca, req, testNow).Cert
		for _, eku := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if err := verifyLeaf(leaf, bundle, "c-1.c-peer.ns.svc.cluster.local", eku, testNow); err != nil {
				t.Errorf("leaf of %s against the bundle for %s: %v", ca.Cert.Subject.CommonName, extKeyUsageName(eku), err)
			}
		}
	}
	stranger := mustIssue(t, mustCA(t, "stranger", year, testNow), req, testNow).Cert
	if err := verifyLeaf(stranger, bundle, "", x509.ExtKeyUsageServerAuth, testNow); err == nil {
		t.Error("leaf of a third CA verifies against the bundle")
	}
}
