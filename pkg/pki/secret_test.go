package pki

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func secretData(leaf *KeyPair, caPEM []byte) map[string][]byte {
	return map[string][]byte{CertKey: leaf.CertPEM, KeyKey: leaf.KeyPEM, CAKey: caPEM}
}

// assertNoSecrets fails when msg quotes any PEM line of data or the private
// scalar of key.
func assertNoSecrets(t *testing.T, msg string, data map[string][]byte, key *KeyPair) {
	t.Helper()
	if strings.Contains(msg, "BEGIN") || strings.Contains(msg, "-----") {
		t.Errorf("message quotes PEM: %q", msg)
	}
	for k, v := range data {
		for line := range strings.Lines(string(v)) {
			line = strings.TrimSpace(line)
			if len(line) >= 16 && !strings.HasPrefix(line, "-----") && strings.Contains(msg, line) {
				t.Errorf("message quotes a line of %s: %q", k, msg)
			}
		}
	}
	if key != nil {
		if ec, ok := key.Key.(*ecdsa.PrivateKey); ok {
			d, err := ec.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(msg, hex.EncodeToString(d)) || strings.Contains(msg, string(d)) {
				t.Errorf("message holds the private key: %q", msg)
			}
		}
	}
}

func TestValidateTLSData(t *testing.T) {
	t.Parallel()
	ca := mustCA(t, "example-ca", 10*year, testNow.Add(-2*year))
	otherCA := mustCA(t, "other-ca", 10*year, testNow.Add(-2*year))

	peerHosts := []string{"example-0.example-peer.ns.svc.cluster.local", "example-1.example-peer.ns.svc.cluster.local"}
	server := mustIssue(t, ca, Request{
		CommonName: "example-server",
		DNSNames:   []string{"example.ns.svc", "*.example-peer.ns.svc.cluster.local"},
		IPs:        []net.IP{net.ParseIP("127.0.0.1")},
		Usage:      UsageServer,
		Lifetime:   year,
	}, testNow)
	peer := mustIssue(t, ca, Request{CommonName: "example-peer", DNSNames: []string{"*.example-peer.ns.svc.cluster.local"}, Usage: UsagePeer, Lifetime: year}, testNow)
	client := mustIssue(t, ca, Request{CommonName: "root", Usage: UsageClient, Lifetime: year}, testNow)
	expired := mustIssue(t, ca, Request{CommonName: "old", Usage: UsageClient, Lifetime: 90 * day}, testNow.Add(-year))
	notYet := mustIssue(t, ca, Request{CommonName: "early", Usage: UsageClient, Lifetime: year}, testNow.Add(time.Hour))
	strangerLeaf := mustIssue(t, otherCA, Request{CommonName: "example-peer", DNSNames: peerHosts, Usage: UsagePeer, Lifetime: year}, testNow)
	serverOnly := mustSign(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "server-only"},
		DNSNames:    peerHosts,
		NotBefore:   testNow.Add(-time.Hour),
		NotAfter:    testNow.Add(year),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca)
	noEKU := mustSign(t, &x509.Certificate{
		Subject:   pkix.Name{CommonName: "any-use"},
		NotBefore: testNow.Add(-time.Hour),
		NotAfter:  testNow.Add(year),
		KeyUsage:  x509.KeyUsageDigitalSignature,
	}, ca)

	// A CA that expired while a leaf it signed claims to live on.
	lapsedCA := mustCA(t, "lapsed-ca", year, testNow.Add(-2*year))
	outlivesCA := mustSign(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "root"},
		NotBefore:   testNow.Add(-time.Hour),
		NotAfter:    testNow.Add(year),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, lapsedCA)

	// root -> intermediate -> leaf, the shape a corporate PKI hands out.
	root := mustSign(t, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "corp-root"},
		NotBefore:             testNow.Add(-year),
		NotAfter:              testNow.Add(5 * year),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            1,
		KeyUsage:              x509.KeyUsageCertSign,
	}, nil)
	intermediate := mustSign(t, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "corp-issuing"},
		NotBefore:             testNow.Add(-year),
		NotAfter:              testNow.Add(2 * year),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign,
	}, root)
	viaIntermediate := mustIssue(t, intermediate, Request{CommonName: "example-peer", DNSNames: peerHosts, Usage: UsagePeer, Lifetime: year}, testNow)
	withChain := secretData(viaIntermediate, root.CertPEM)
	withChain[CertKey] = append(slices.Clone(viaIntermediate.CertPEM), intermediate.CertPEM...)
	lapsedIntermediate := mustSign(t, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "corp-issuing-2028"},
		NotBefore:             testNow.Add(-3 * year),
		NotAfter:              testNow.Add(-day),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign,
	}, root)
	viaLapsed := mustSign(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "root"},
		NotBefore:   testNow.Add(-time.Hour),
		NotAfter:    testNow.Add(year),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, lapsedIntermediate)
	withLapsedChain := secretData(viaLapsed, root.CertPEM)
	withLapsedChain[CertKey] = append(slices.Clone(viaLapsed.CertPEM), lapsedIntermediate.CertPEM...)

	// An issuing CA whose extended key usage limits it to client certificates;
	// Go, like most TLS stacks, applies that limit to every leaf below it.
	clientOnlyIntermediate := mustSign(t, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "corp-clients"},
		NotBefore:             testNow.Add(-year),
		NotAfter:              testNow.Add(2 * year),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, root)
	viaClientOnly := mustIssue(t, clientOnlyIntermediate, Request{CommonName: "example-peer", DNSNames: peerHosts, Usage: UsagePeer, Lifetime: year}, testNow)
	withClientOnlyChain := secretData(viaClientOnly, root.CertPEM)
	withClientOnlyChain[CertKey] = append(slices.Clone(viaClientOnly.CertPEM), clientOnlyIntermediate.CertPEM...)

	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	x25519DER, err := x509.MarshalPKCS8PrivateKey(x25519)
	if err != nil {
		t.Fatal(err)
	}

	bundle, err := Bundle(otherCA.CertPEM, ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}

	good := secretData(server, ca.CertPEM)
	edit := func(f func(map[string][]byte)) map[string][]byte {
		d := maps.Clone(good)
		f(d)
		return d
	}
	garbageDER := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})
	encryptedKey := pem.EncodeToMemory(&pem.Block{
		Type:    "EC PRIVATE KEY",
		Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00000000000000000000000000000000"},
		Bytes:   []byte{1, 2, 3, 4},
	})

	tests := []struct {
		name    string
		data    map[string][]byte
		usage   Usage
		hosts   []string
		wantCN  string   // on success
		wantErr []string // substrings of the error; empty for success
	}{
		{name: "server", data: good, usage: UsageServer, hosts: []string{"example.ns.svc", "127.0.0.1", peerHosts[0]}, wantCN: "example-server"},
		{name: "server without hosts", data: good, usage: UsageServer, wantCN: "example-server"},
		{name: "server certificate is also a good peer certificate", data: good, usage: UsagePeer, hosts: peerHosts, wantCN: "example-server"},
		{name: "peer wildcard", data: secretData(peer, ca.CertPEM), usage: UsagePeer, hosts: peerHosts, wantCN: "example-peer"},
		{name: "client", data: secretData(client, ca.CertPEM), usage: UsageClient, wantCN: "root"},
		{name: "server certificate used as a client", data: good, usage: UsageClient, wantCN: "example-server"},
		{name: "no extended key usage allows any use", data: secretData(noEKU, ca.CertPEM), usage: UsagePeer, wantCN: "any-use"},
		{name: "ca.crt is a bundle", data: secretData(peer, bundle), usage: UsagePeer, hosts: peerHosts, wantCN: "example-peer"},
		{name: "intermediate after the leaf", data: withChain, usage: UsagePeer, hosts: peerHosts, wantCN: "example-peer"},

		{name: "tls.crt missing", data: edit(func(d map[string][]byte) { delete(d, CertKey) }), wantErr: []string{"tls.crt is missing"}},
		{name: "tls.key missing", data: edit(func(d map[string][]byte) { delete(d, KeyKey) }), wantErr: []string{"tls.key is missing"}},
		{name: "ca.crt missing", data: edit(func(d map[string][]byte) { delete(d, CAKey) }), wantErr: []string{"ca.crt is missing"}},
		{name: "everything missing", data: map[string][]byte{}, wantErr: []string{"tls.crt is missing", "tls.key is missing", "ca.crt is missing"}},
		{name: "nil data", data: nil, wantErr: []string{"tls.crt is missing"}},
		{name: "ca.crt empty", data: edit(func(d map[string][]byte) { d[CAKey] = []byte(" \n") }), wantErr: []string{"ca.crt is empty"}},

		{name: "tls.crt not PEM", data: edit(func(d map[string][]byte) { d[CertKey] = []byte("hello world, not a certificate") }), wantErr: []string{"tls.crt holds no PEM-encoded certificate"}},
		{name: "tls.crt bad DER", data: edit(func(d map[string][]byte) { d[CertKey] = garbageDER }), wantErr: []string{"tls.crt holds a certificate that cannot be parsed"}},
		{name: "tls.key not PEM", data: edit(func(d map[string][]byte) { d[KeyKey] = []byte("hello world, not a key") }), wantErr: []string{"tls.key holds no PEM-encoded private key"}},
		{name: "tls.key bad DER", data: edit(func(d map[string][]byte) {
			d[KeyKey] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("secret-ish bytes that are not DER")})
		}), wantErr: []string{"tls.key holds a private key that cannot be parsed"}},
		{name: "tls.key encrypted", data: edit(func(d map[string][]byte) { d[KeyKey] = encryptedKey }), wantErr: []string{"tls.key holds an encrypted private key"}},
		{name: "ca.crt not PEM", data: edit(func(d map[string][]byte) { d[CAKey] = []byte("hello world, not a CA") }), wantErr: []string{"ca.crt holds no PEM-encoded certificate"}},
		{name: "ca.crt bad DER", data: edit(func(d map[string][]byte) { d[CAKey] = garbageDER }), wantErr: []string{"ca.crt holds a certificate that cannot be parsed"}},
		{name: "tls.crt and tls.key swapped", data: edit(func(d map[string][]byte) { d[CertKey], d[KeyKey] = d[KeyKey], d[CertKey] }),
			wantErr: []string{"tls.crt holds no PEM-encoded certificate", "PRIVATE KEY"}},

		{name: "leaf after its CA in tls.crt", data: edit(func(d map[string][]byte) { d[CertKey] = append(slices.Clone(ca.CertPEM), server.CertPEM...) }),
			wantErr: []string{"tls.key matches certificate 2 in tls.crt", "must come first"}},
		{name: "key-agreement key", data: edit(func(d map[string][]byte) {
			d[KeyKey] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: x25519DER})
		}),
			wantErr: []string{"tls.key holds a private key that TLS cannot use"}},
		{name: "mismatched key", data: edit(func(d map[string][]byte) { d[KeyKey] = peer.KeyPEM }), wantErr: []string{"tls.key does not match the certificate in tls.crt"}},
		{name: "wrong CA", data: edit(func(d map[string][]byte) { d[CAKey] = otherCA.CertPEM }), wantErr: []string{"the certificate in tls.crt is not signed by ca.crt"}},
		{name: "leaf of another CA", data: secretData(strangerLeaf, ca.CertPEM), usage: UsagePeer, wantErr: []string{"the certificate in tls.crt is not signed by ca.crt"}},
		{name: "intermediate missing", data: secretData(viaIntermediate, root.CertPEM), usage: UsagePeer,
			wantErr: []string{"the certificate in tls.crt is not signed by ca.crt", "append the intermediate certificates to tls.crt"}},
		{name: "expired", data: secretData(expired, ca.CertPEM), usage: UsageClient,
			wantErr: []string{"the certificate in tls.crt expired at " + formatTime(expired.Cert.NotAfter)}},
		{name: "not yet valid", data: secretData(notYet, ca.CertPEM), usage: UsageClient,
			wantErr: []string{"the certificate in tls.crt is not valid until " + formatTime(notYet.Cert.NotBefore)}},
		{name: "CA expired", data: secretData(outlivesCA, lapsedCA.CertPEM), usage: UsageClient,
			wantErr: []string{`the CA certificate "lapsed-ca" in ca.crt expired at ` + formatTime(lapsedCA.Cert.NotAfter)}},
		{name: "intermediate expired", data: withLapsedChain, usage: UsageClient,
			wantErr: []string{`the intermediate certificate "corp-issuing-2028" in tls.crt expired at`}},
		{name: "host not covered", data: good, usage: UsageServer, hosts: []string{"example.ns.svc", "example-0.example-peer.other.svc.cluster.local", "10.1.2.3"},
			wantErr: []string{"the certificate in tls.crt does not cover example-0.example-peer.other.svc.cluster.local, 10.1.2.3", "it covers example.ns.svc"}},
		{name: "client certificate has no hosts", data: secretData(client, ca.CertPEM), usage: UsageClient, hosts: []string{"example.ns.svc"},
			wantErr: []string{"the certificate in tls.crt does not cover example.ns.svc; it has no DNS or IP subject alternative names"}},
		{name: "intermediate allows only clients", data: withClientOnlyChain, usage: UsagePeer,
			wantErr: []string{"the certificate in tls.crt cannot be used as a peer certificate", "does not allow server authentication"}},
		{name: "client certificate used as a server", data: secretData(client, ca.CertPEM), usage: UsageServer,
			wantErr: []string{"the certificate in tls.crt cannot be used as a server certificate", "serverAuth"}},
		{name: "client certificate used as a peer", data: secretData(client, ca.CertPEM), usage: UsagePeer,
			wantErr: []string{"the certificate in tls.crt cannot be used as a peer certificate", "serverAuth"}},
		{name: "server-only certificate used as a peer", data: secretData(serverOnly, ca.CertPEM), usage: UsagePeer, hosts: peerHosts,
			wantErr: []string{"the certificate in tls.crt cannot be used as a peer certificate", "clientAuth"}},
		{name: "server-only certificate used as a client", data: secretData(serverOnly, ca.CertPEM), usage: UsageClient,
			wantErr: []string{"the certificate in tls.crt cannot be used as a client certificate", "clientAuth"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kp, err := ValidateTLSData(tt.data, tt.usage, tt.hosts, testNow)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("ValidateTLSData: %v", err)
				}
				if kp.Cert.Subject.CommonName != tt.wantCN {
					t.Errorf("leaf CommonName = %q, want %q", kp.Cert.Subject.CommonName, tt.wantCN)
				}
				if !keyMatches(kp.Key, kp.Cert) {
					t.Error("returned key does not match the returned certificate")
				}
				if got, want := len(mustParse(kp.CertPEM)), len(mustParse(tt.data[CertKey])); got != want {
					t.Errorf("CertPEM holds %d certificates, tls.crt %d", got, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateTLSData succeeded, want an error containing %q", tt.wantErr)
			}
			msg := err.Error()
			if !strings.Contains(msg, CertKey) && !strings.Contains(msg, KeyKey) && !strings.Contains(msg, CAKey) {
				t.Errorf("error names no Secret key: %q", msg)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
			assertNoSecrets(t, msg, tt.data, server)
		})
	}
}

func TestValidateTLSDataUnknownUsage(t *testing.T) {
	t.Parallel()
	ca := mustCA(t, "ca", year, testNow)
	leaf := mustIssue(t, ca, Request{CommonName: "u", Usage: UsageClient, Lifetime: day}, testNow)
	if _, err := ValidateTLSData(secretData(leaf, ca.CertPEM), Usage(42), nil, testNow); err == nil {
		t.Error("ValidateTLSData accepted an unknown usage")
	}
}

// What ValidateTLSData returns is re-encoded, so that stray text and other
// key formats in a user's Secret do not spread to what the operator writes.
func TestValidateTLSDataReturnsNormalisedPEM(t *testing.T) {
	t.Parallel()
	ca := mustCA(t, "ca", year, testNow)
	leaf := mustIssue(t, ca, Request{CommonName: "u", Usage: UsageClient, Lifetime: day}, testNow)
	ecKey := leaf.Key.(*ecdsa.PrivateKey)
	sec1, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	data := secretData(leaf, ca.CertPEM)
	data[KeyKey] = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1})
	data[CertKey] = append([]byte("leaf certificate follows\n"), leaf.CertPEM...)
	kp, err := ValidateTLSData(data, UsageClient, nil, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if block, _ := pem.Decode(kp.KeyPEM); block == nil || block.Type != "PRIVATE KEY" {
		t.Error("KeyPEM is not PKCS#8")
	}
	if string(kp.CertPEM) != string(leaf.CertPEM) {
		t.Error("CertPEM was not re-encoded from the parsed certificate")
	}
}

// The message of an unparseable key leaves the parser's detail out, but the
// cause stays reachable for logs and errors.As.
func TestValidateTLSDataKeyParseErrorKeepsCause(t *testing.T) {
	t.Parallel()
	ca := mustCA(t, "ca", year, testNow)
	leaf := mustIssue(t, ca, Request{CommonName: "u", Usage: UsageClient, Lifetime: day}, testNow)
	data := secretData(leaf, ca.CertPEM)
	data[KeyKey] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{0x30, 0x03, 0x02, 0x01, 0x07}})
	_, err := ValidateTLSData(data, UsageClient, nil, testNow)
	if err == nil {
		t.Fatal("ValidateTLSData accepted a malformed key")
	}
	if strings.Contains(err.Error(), "asn1") || strings.Contains(err.Error(), "x509:") {
		t.Errorf("message carries parser detail: %q", err)
	}
	if errors.Unwrap(err) == nil {
		t.Error("the parser's error is not wrapped")
	}
}
