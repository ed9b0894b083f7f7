// Package scrape reads the operator's /metrics the way Prometheus does:
// over HTTPS, with a service account token the operator checks.
package scrape

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// MetricsPort is the operator's metrics port.
const MetricsPort = 8443

// Operator scrapes the operator Pod p with a token of the service account
// namespace/account, which must be allowed to get /metrics.
func Operator(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, namespace, account string) (string, error) {
	tok, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, account,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s/%s: %w", namespace, account, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s:%d/metrics", p.Status.PodIP, MetricsPort), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+tok.Status.Token)
	// The operator serves metrics with a self-signed certificate.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("metrics of %s: %s", p.Name, resp.Status)
	}
	return string(body), nil
}
