package main

import (
	"encoding/base64"
	"fmt"
)

// kubeconfig is a kubeconfig for server with a "cert" context (client certificate, current) and
// a "token" context (bearer token), both trusting the harness's CA.
func (p *pki) kubeconfig(server string) []byte {
	b64 := base64.StdEncoding.EncodeToString
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: informer-tests
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin-cert
  user:
    client-certificate-data: %s
    client-key-data: %s
- name: admin-token
  user:
    token: %s
contexts:
- name: cert
  context:
    cluster: informer-tests
    user: admin-cert
- name: token
  context:
    cluster: informer-tests
    user: admin-token
current-context: cert
`, server, b64(p.caCert), b64(p.clientCert), b64(p.clientKey), p.token))
}
