package pki

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Secret data keys.
const (
	CertKey = "tls.crt"
	KeyKey  = "tls.key"
	CAKey   = "ca.crt"
)

// ValidateTLSData checks a Secret's data: tls.crt, tls.key and ca.crt present
// and parseable; key matches cert; the leaf verifies against ca.crt (with any
// intermediates that follow the leaf in tls.crt) for the given usage
// (server/peer: ServerAuth; client: ClientAuth; peer additionally
// ClientAuth); not expired at now; and, when hosts is non-empty, the leaf
// covers each host (x509 VerifyHostname; hosts may be DNS names or IPs). It
// returns the parsed leaf pair, whose CertPEM holds the leaf and its
// intermediates.
//
// The errors end up in the status of an object the user reads, so each one
// names the Secret key at fault and says what to fix. They never quote the
// data: the Secret holds a private key, and status is far more widely
// readable than Secrets are.
func ValidateTLSData(data map[string][]byte, usage Usage, hosts []string, now time.Time) (*KeyPair, error) {
	if !usage.valid() {
		return nil, fmt.Errorf("unknown certificate usage %v", usage)
	}
	if err := checkPresent(data); err != nil {
		return nil, err
	}
	chain, err := readCerts(CertKey, data[CertKey])
	if err != nil {
		return nil, err
	}
	leaf, intermediates := chain[0], chain[1:]
	key, err := readKey(data[KeyKey])
	if err != nil {
		return nil, err
	}
	if !keyMatches(key, leaf) {
		for i, c := range intermediates {
			if keyMatches(key, c) {
				return nil, fmt.Errorf("%s matches certificate %d in %s, but the certificate it matches must come first, followed by its intermediates",
					KeyKey, i+2, CertKey)
			}
		}
		return nil, fmt.Errorf("%s does not match the certificate in %s", KeyKey, CertKey)
	}
	roots, err := readCerts(CAKey, data[CAKey])
	if err != nil {
		return nil, err
	}
	// The leaf's own dates are checked before the chain so that an expired
	// certificate is reported as expired rather than as unverifiable.
	if problem := validityProblem(leaf, now); problem != "" {
		return nil, fmt.Errorf("the certificate in %s %s", CertKey, problem)
	}
	if err := verifyChain(leaf, intermediates, roots, usage, now); err != nil {
		return nil, err
	}
	if err := checkHosts(leaf, hosts); err != nil {
		return nil, err
	}
	kp, err := newKeyPair(chain, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyKey, err)
	}
	return kp, nil
}

// checkPresent reports every absent or empty key at once, so that the user
// does not fix them one reconcile at a time.
func checkPresent(data map[string][]byte) error {
	var problems []string
	for _, k := range []string{CertKey, KeyKey, CAKey} {
		v, ok := data[k]
		switch {
		case !ok:
			problems = append(problems, k+" is missing")
		case len(bytes.TrimSpace(v)) == 0:
			problems = append(problems, k+" is empty")
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func readCerts(name string, b []byte) ([]*x509.Certificate, error) {
	certs, err := ParseCertsPEM(b)
	switch {
	case errors.Is(err, errNoCertificate):
		return nil, fmt.Errorf("%s holds no PEM-encoded certificate%s", name, foundBlocks(b))
	case err != nil:
		return nil, fmt.Errorf("%s holds a certificate that cannot be parsed: %w", name, err)
	}
	return certs, nil
}

func readKey(b []byte) (crypto.Signer, error) {
	key, err := parsePrivateKey(b)
	switch {
	case err == nil:
		return key, nil
	case errors.Is(err, errNoPrivateKey):
		return nil, fmt.Errorf("%s holds no PEM-encoded private key%s", KeyKey, foundBlocks(b))
	case errors.Is(err, errEncryptedKey):
		return nil, fmt.Errorf("%s holds an encrypted private key; etcd needs it unencrypted", KeyKey)
	case errors.Is(err, errNotSigningKey):
		return nil, fmt.Errorf("%s holds a private key that TLS cannot use: %w", KeyKey, err)
	default:
		return nil, &redactedError{
			msg:   KeyKey + " holds a private key that cannot be parsed; it must be an unencrypted PKCS#8, PKCS#1 RSA or SEC1 EC key",
			cause: err,
		}
	}
}

// redactedError reads as msg alone but still unwraps to its cause. Parser
// errors about a private key describe the key's bytes (ASN.1 tags, lengths,
// versions), which do not belong in a status message.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

// foundBlocks names the PEM block types present, which tells a user who
// swapped tls.crt and tls.key what happened. Only the types are named: the
// blocks themselves may be key material.
func foundBlocks(b []byte) string {
	var types []string
	for block, rest := pem.Decode(b); block != nil; block, rest = pem.Decode(rest) {
		if !slices.Contains(types, block.Type) {
			types = append(types, block.Type)
		}
	}
	if len(types) == 0 {
		return ""
	}
	return fmt.Sprintf(" (it holds only PEM blocks of type %s)", strings.Join(types, ", "))
}

// validityProblem says why c is not valid at now, or "" when it is. The
// boundaries match x509.Certificate.Verify.
func validityProblem(c *x509.Certificate, now time.Time) string {
	switch {
	case now.Before(c.NotBefore):
		return "is not valid until " + formatTime(c.NotBefore)
	case now.After(c.NotAfter):
		return "expired at " + formatTime(c.NotAfter)
	}
	return ""
}

func verifyChain(leaf *x509.Certificate, intermediates, roots []*x509.Certificate, usage Usage, now time.Time) error {
	opts := x509.VerifyOptions{
		Roots:         x509.NewCertPool(),
		Intermediates: x509.NewCertPool(),
		CurrentTime:   now,
		// Any first, so that a wrong CA is not reported as a wrong usage.
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}
	for _, c := range roots {
		opts.Roots.AddCert(c)
	}
	for _, c := range intermediates {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return chainError(leaf, intermediates, roots, now, err)
	}

	// Verify accepts a chain when any one of KeyUsages is allowed, so each
	// required usage gets its own pass.
	for _, eku := range usage.requiredExtKeyUsages() {
		if !allowsExtKeyUsage(leaf, eku) {
			return fmt.Errorf("the certificate in %s cannot be used as a %v certificate: it lacks the %s extended key usage",
				CertKey, usage, extKeyUsageName(eku))
		}
		opts.KeyUsages = []x509.ExtKeyUsage{eku}
		if _, err := leaf.Verify(opts); err != nil {
			return fmt.Errorf("the certificate in %s cannot be used as a %v certificate: a CA above it in %s or %s does not allow %s: %w",
				CertKey, usage, CertKey, CAKey, extKeyUsageName(eku), err)
		}
	}
	return nil
}

// chainError turns a failed verification into advice. Verify reports a CA
// outside its validity period only as an unknown authority, so that case is
// looked for first.
func chainError(leaf *x509.Certificate, intermediates, roots []*x509.Certificate, now time.Time, err error) error {
	children := append([]*x509.Certificate{leaf}, intermediates...)
	if c, problem := staleIssuer(children, intermediates, now); c != nil {
		return fmt.Errorf("the intermediate certificate %q in %s %s", describe(c), CertKey, problem)
	}
	if c, problem := staleIssuer(children, roots, now); c != nil {
		return fmt.Errorf("the CA certificate %q in %s %s", describe(c), CAKey, problem)
	}
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		hint := ""
		if len(intermediates) == 0 && !issuerNamedIn(leaf, roots) {
			hint = " (if an intermediate CA signed it, append the intermediate certificates to " + CertKey + " after it)"
		}
		return fmt.Errorf("the certificate in %s is not signed by %s%s: %w", CertKey, CAKey, hint, err)
	}
	return fmt.Errorf("the certificate in %s does not verify against %s: %w", CertKey, CAKey, err)
}

// staleIssuer finds a certificate among candidates that signed one of
// children but is not valid at now.
func staleIssuer(children, candidates []*x509.Certificate, now time.Time) (*x509.Certificate, string) {
	for _, c := range candidates {
		problem := validityProblem(c, now)
		if problem == "" {
			continue
		}
		for _, child := range children {
			if child != c && child.CheckSignatureFrom(c) == nil {
				return c, problem
			}
		}
	}
	return nil, ""
}

func issuerNamedIn(leaf *x509.Certificate, cas []*x509.Certificate) bool {
	for _, c := range cas {
		if bytes.Equal(leaf.RawIssuer, c.RawSubject) {
			return true
		}
	}
	return false
}

// allowsExtKeyUsage mirrors Verify: a certificate without extended key usages
// may be used for anything.
func allowsExtKeyUsage(c *x509.Certificate, eku x509.ExtKeyUsage) bool {
	if len(c.ExtKeyUsage) == 0 && len(c.UnknownExtKeyUsage) == 0 {
		return true
	}
	return slices.Contains(c.ExtKeyUsage, eku) || slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageAny)
}

// extKeyUsageName gives both the plain name and the OpenSSL spelling a user
// would put in an extendedKeyUsage line.
func extKeyUsageName(eku x509.ExtKeyUsage) string {
	switch eku {
	case x509.ExtKeyUsageServerAuth:
		return "server authentication (serverAuth)"
	case x509.ExtKeyUsageClientAuth:
		return "client authentication (clientAuth)"
	}
	return fmt.Sprintf("ExtKeyUsage(%d)", int(eku))
}

func checkHosts(leaf *x509.Certificate, hosts []string) error {
	var uncovered []string
	for _, h := range hosts {
		if h != "" && leaf.VerifyHostname(h) != nil {
			uncovered = append(uncovered, h)
		}
	}
	if len(uncovered) == 0 {
		return nil
	}
	covered := slices.Clone(leaf.DNSNames)
	for _, ip := range leaf.IPAddresses {
		covered = append(covered, ip.String())
	}
	what := "it has no DNS or IP subject alternative names"
	if len(covered) > 0 {
		what = "it covers " + strings.Join(covered, ", ")
	}
	return fmt.Errorf("the certificate in %s does not cover %s; %s", CertKey, strings.Join(uncovered, ", "), what)
}
