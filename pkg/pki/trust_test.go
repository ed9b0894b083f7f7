package pki

import (
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestValidateCAData(t *testing.T) {
	t.Parallel()
	ca := mustCA(t, "clients", year, testNow)
	other := mustCA(t, "other clients", year, testNow)
	expired := mustCA(t, "expired", day, testNow.Add(-2*day))
	future := mustCA(t, "future", year, testNow.Add(30*day))
	leaf := mustIssue(t, ca, Request{CommonName: "root", Usage: UsageClient, Lifetime: 30 * day}, testNow)
	v1 := mustSign(t, &x509.Certificate{Subject: pkix.Name{CommonName: "no constraints"}, NotBefore: testNow.Add(-time.Hour), NotAfter: testNow.Add(year)}, nil)
	cat := func(pems ...[]byte) []byte { return slices.Concat(pems...) }
	tests := []struct {
		name    string
		data    map[string][]byte
		wantCNs []string // nil: want an error naming wantErr
		wantErr string
	}{
		{name: "one CA", data: map[string][]byte{CAKey: ca.CertPEM}, wantCNs: []string{"clients"}},
		{name: "two CAs", data: map[string][]byte{CAKey: cat(ca.CertPEM, other.CertPEM)}, wantCNs: []string{"clients", "other clients"}},
		{name: "expired CA left out", data: map[string][]byte{CAKey: cat(expired.CertPEM, ca.CertPEM)}, wantCNs: []string{"clients"}},
		{name: "CA not valid yet kept", data: map[string][]byte{CAKey: future.CertPEM}, wantCNs: []string{"future"}},
		{name: "a key next to the CA is skipped", data: map[string][]byte{CAKey: cat(ca.CertPEM, ca.KeyPEM)}, wantCNs: []string{"clients"}},
		{name: "missing", data: map[string][]byte{CertKey: ca.CertPEM}, wantErr: "ca.crt is missing"},
		{name: "empty", data: map[string][]byte{CAKey: []byte(" \n")}, wantErr: "ca.crt is empty"},
		{name: "not PEM", data: map[string][]byte{CAKey: []byte("garbage")}, wantErr: "ca.crt holds no PEM-encoded certificate"},
		{name: "a key alone", data: map[string][]byte{CAKey: ca.KeyPEM}, wantErr: "PEM blocks of type PRIVATE KEY"},
		{name: "damaged certificate", data: map[string][]byte{CAKey: []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")}, wantErr: "cannot be parsed"},
		{name: "a client certificate", data: map[string][]byte{CAKey: cat(ca.CertPEM, leaf.CertPEM)}, wantErr: `certificate 2 in ca.crt ("root") is not a CA`},
		{name: "no basic constraints", data: map[string][]byte{CAKey: v1.CertPEM}, wantErr: "not a CA"},
		{name: "only expired", data: map[string][]byte{CAKey: expired.CertPEM}, wantErr: "every certificate in ca.crt has expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := ValidateCAData(tt.data, testNow)
			if tt.wantCNs == nil {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "BEGIN") {
					t.Errorf("error %q quotes the data", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ValidateCAData: %v", err)
			}
			if got := commonNames(mustParse(out)); !slices.Equal(got, tt.wantCNs) {
				t.Errorf("CAs %v, want %v", got, tt.wantCNs)
			}
			if strings.Contains(string(out), "PRIVATE KEY") {
				t.Errorf("the output holds a key")
			}
		})
	}
}

func TestTrustRevision(t *testing.T) {
	t.Parallel()
	op := mustCA(t, "operator", year, testNow)
	next := mustCA(t, "operator next", year, testNow)
	peer := mustCA(t, "peer", year, testNow)
	clients := mustCA(t, "clients", year, testNow)
	clients2 := mustCA(t, "clients 2", year, testNow)
	cat := func(pems ...[]byte) []byte { return slices.Concat(pems...) }
	rev := func(p, c []byte) string {
		t.Helper()
		r, err := TrustRevision(p, c)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	base := rev(op.CertPEM, op.CertPEM)
	tests := []struct {
		name         string
		peer, client []byte
		same         bool // as base
	}{
		{"the same CAs", op.CertPEM, op.CertPEM, true},
		{"duplicates do not count", cat(op.CertPEM, op.CertPEM), op.CertPEM, true},
		{"a CA rotation adds the next CA", cat(op.CertPEM, next.CertPEM), cat(op.CertPEM, next.CertPEM), false},
		{"a trusted client CA added", op.CertPEM, cat(op.CertPEM, clients.CertPEM), false},
		{"a peer CA of the user", peer.CertPEM, op.CertPEM, false},
	}
	for _, tt := range tests {
		if got := rev(tt.peer, tt.client); (got == base) != tt.same {
			t.Errorf("%s: revision %s, base %s, want same %v", tt.name, got, base, tt.same)
		}
	}

	withClients := rev(peer.CertPEM, cat(op.CertPEM, clients.CertPEM))
	if got := rev(peer.CertPEM, cat(clients.CertPEM, op.CertPEM)); got != withClients {
		t.Errorf("the order of the CAs changed the revision")
	}
	if got := rev(peer.CertPEM, cat(op.CertPEM, clients2.CertPEM)); got == withClients {
		t.Errorf("another trusted client CA left the revision unchanged")
	}
	if got := rev(peer.CertPEM, cat(op.CertPEM, clients.CertPEM, clients2.CertPEM)); got == withClients {
		t.Errorf("a second trusted client CA left the revision unchanged")
	}
	// The same CAs on other sides: members trusting the peer's CA for
	// clients is what must change, so it must restart them.
	if rev(cat(peer.CertPEM, op.CertPEM), op.CertPEM) == rev(peer.CertPEM, cat(peer.CertPEM, op.CertPEM)) {
		t.Errorf("a CA moving from the client side to the peer side left the revision unchanged")
	}

	// Equal sides keep the hash of the one set: the revision of such a
	// cluster does not change with the operator's version.
	if want := legacyRevision(t, op.CertPEM); base != want {
		t.Errorf("revision %s of the operator's CA on both sides, want %s as before", base, want)
	}
	if _, err := TrustRevision([]byte("garbage"), op.CertPEM); err == nil {
		t.Errorf("a damaged peer bundle gave a revision")
	}
}

// legacyRevision is the revision as the operator computed it when the peer
// and client CAs were one set: the first 8 bytes of the SHA-256 of the
// sorted, distinct certificate sums joined by commas.
func legacyRevision(t *testing.T, pems ...[]byte) string {
	t.Helper()
	var all []string
	for _, p := range pems {
		for _, c := range mustParse(p) {
			sum := sha256.Sum256(c.Raw)
			all = append(all, hex.EncodeToString(sum[:]))
		}
	}
	slices.Sort(all)
	sum := sha256.Sum256([]byte(strings.Join(slices.Compact(all), ",")))
	return hex.EncodeToString(sum[:8])
}
