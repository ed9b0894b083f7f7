package pki

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ValidateCAData checks the ca.crt of a Secret that names CAs to trust:
// present, PEM certificates only, each of them a CA. It returns the CAs not
// expired at now, as PEM; a CA not valid yet is kept, since it will be. An
// expired one is left out rather than refused, so that a CA running out in a
// bundle that also holds its successor breaks nothing, but a bundle of
// expired CAs alone is an error: it trusts nobody.
//
// Like ValidateTLSData, errors name the key at fault and never quote data.
func ValidateCAData(data map[string][]byte, now time.Time) ([]byte, error) {
	b, ok := data[CAKey]
	switch {
	case !ok:
		return nil, errors.New(CAKey + " is missing")
	case len(bytes.TrimSpace(b)) == 0:
		return nil, errors.New(CAKey + " is empty")
	}
	certs, err := readCerts(CAKey, b)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	var lastExpired time.Time
	for i, c := range certs {
		if !c.BasicConstraintsValid || !c.IsCA {
			return nil, fmt.Errorf("certificate %d in %s (%q) is not a CA certificate: it lacks the CA basic constraint; put the CAs that sign client certificates there, not the certificates themselves",
				i+1, CAKey, describe(c))
		}
		if now.After(c.NotAfter) {
			lastExpired = maxTime(lastExpired, c.NotAfter)
			continue
		}
		if err := pem.Encode(&out, &pem.Block{Type: pemCertificate, Bytes: c.Raw}); err != nil {
			return nil, fmt.Errorf("encode %s: %w", CAKey, err)
		}
	}
	if out.Len() == 0 {
		return nil, fmt.Errorf("every certificate in %s has expired, the last at %s", CAKey, formatTime(lastExpired))
	}
	return out.Bytes(), nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TrustRevision names what a member loads when it starts: the CAs it trusts
// for peers and those it trusts for clients. The order of the certificates
// and how they are split into PEM inputs do not matter, but the side does:
// a CA moving from the client side to the peer side is a change members
// must restart for.
//
// When both sides hold the same CAs (the operator's CA on both, the
// default), the revision is the hash of that one set: the name such a
// cluster's revision had before the sides were told apart, so that an
// operator upgrade restarts none of its members.
func TrustRevision(peer, client []byte) (string, error) {
	p, err := certSums(peer)
	if err != nil {
		return "", fmt.Errorf("trust revision of the peer CAs: %w", err)
	}
	c, err := certSums(client)
	if err != nil {
		return "", fmt.Errorf("trust revision of the client CAs: %w", err)
	}
	text := strings.Join(p, ",")
	if !slices.Equal(p, c) {
		text = "peer:" + text + ";client:" + strings.Join(c, ",")
	}
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:8]), nil
}

// certSums are the sorted, distinct SHA-256 sums of the certificates in b.
func certSums(b []byte) ([]string, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	certs, err := ParseCertsPEM(b)
	if err != nil {
		return nil, err
	}
	sums := make([]string, 0, len(certs))
	for _, c := range certs {
		sum := sha256.Sum256(c.Raw)
		sums = append(sums, hex.EncodeToString(sum[:]))
	}
	slices.Sort(sums)
	return slices.Compact(sums), nil
}
