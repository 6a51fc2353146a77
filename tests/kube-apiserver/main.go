// Command kube-apiserver runs a real Kubernetes API server and etcd on loopback for the
// informer-tests suite, the benchmarks and by hand (`cargo xtask kube-apiserver`).
//
// It builds kube-apiserver from Kubernetes' published Go modules and embeds etcd's server, so
// nothing is downloaded at run time. Everything listens on 127.0.0.1 on free ports and keeps its
// data in a temporary directory, removed on exit.
//
// Once the API server is ready, one JSON line goes to stdout:
//
//	{"server":"https://127.0.0.1:…","kubeconfig":"/tmp/…/kubeconfig","etcd":"http://127.0.0.1:…",
//	 "control":"http://127.0.0.1:…","dir":"/tmp/…","log":"/tmp/…/kube-apiserver.log"}
//
// The kubeconfig has two contexts: "cert" (client certificate, the current one) and "token"
// (bearer token); both users are in system:masters. The control address takes POST /restart
// (stop the API server and start it again on the same port and etcd) and POST /compact (compact
// etcd at its current revision; answers {"revision":N}).
//
// The program stops everything when it gets SIGINT or SIGTERM, or when its stdin reaches end of
// file, which is how a parent that dies takes it down (the parent holds the pipe's other end).
// Pass --stdin=false to keep it running with stdin closed.
//
// `kube-apiserver apiserver FLAGS…` is the API server itself (the child process this program
// starts), as Kubernetes' own cmd/kube-apiserver runs it. `kube-apiserver controller-manager
// FLAGS…` is kube-controller-manager, which the program starts with the garbage collector alone
// (`--controllers=garbagecollector`), so that owner references are collected as in a cluster;
// it logs to kube-controller-manager.log in the data directory.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "apiserver" {
		os.Exit(runAPIServer(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "controller-manager" {
		os.Exit(runControllerManager(os.Args[2:]))
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "kube-apiserver harness: %v\n", err)
		os.Exit(1)
	}
}

type ready struct {
	Server     string `json:"server"`
	Kubeconfig string `json:"kubeconfig"`
	Etcd       string `json:"etcd"`
	Control    string `json:"control"`
	Dir        string `json:"dir"`
	Log        string `json:"log"`
}

func run() error {
	// A parent that exits without stopping the harness (a test binary holding the server in a
	// static) closes its end of our stdout and stderr with our stdin. Go kills a program that
	// writes to a broken stdout or stderr with SIGPIPE unless the signal is ignored, and that
	// would skip the deferred clean-up: each such run would leave its data directory behind.
	signal.Ignore(syscall.SIGPIPE)
	dirFlag := flag.String("dir", "", "directory for data, certificates and logs (default: a new temporary directory, removed on exit)")
	watchStdin := flag.Bool("stdin", true, "exit when stdin reaches end of file")
	extra := flag.String("apiserver-flags", "", "extra kube-apiserver flags, space separated")
	flag.Parse()

	dir := *dirFlag
	if dir == "" {
		tmp, err := os.MkdirTemp("", "informer-kube-apiserver-")
		if err != nil {
			return err
		}
		dir = tmp
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}

	etcd, etcdURL, err := startEtcd(dir)
	if err != nil {
		return fmt.Errorf("starting etcd: %w", err)
	}
	defer etcd.Close()

	pki, err := newPKI()
	if err != nil {
		return err
	}
	files, err := pki.write(dir)
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The endpoint reconciler refuses a loopback address; nothing here routes to the
		// kubernetes service anyway.
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file=" + files["server.crt"],
		"--tls-private-key-file=" + files["server.key"],
		"--client-ca-file=" + files["ca.crt"],
		"--token-auth-file=" + files["tokens.csv"],
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + files["sa.pub"],
		"--service-account-signing-key-file=" + files["sa.key"],
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--cert-dir=" + filepath.Join(dir, "certs"),
		// No controller manager runs here, so nothing creates the default service account a
		// pod would need; the embedded server has no such rule either.
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--profiling=false",
		// Compaction is the tests' to force (POST /compact), not a timer's.
		"--etcd-compaction-interval=0",
	}
	if *extra != "" {
		args = append(args, strings.Fields(*extra)...)
	}
	logPath := filepath.Join(dir, "kube-apiserver.log")
	api := &apiServer{args: args, log: logPath, server: server, pki: pki}
	if err := api.start(); err != nil {
		return err
	}
	defer api.stop()

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, pki.kubeconfig(server), 0o600); err != nil {
		return err
	}
	// The garbage collector, as a cluster's kube-controller-manager runs it.
	cm, err := startControllerManager(kubeconfig, filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		return err
	}
	defer func() {
		cm.Process.Signal(syscall.SIGTERM)
		cm.Wait()
	}()

	control, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go http.Serve(control, controlHandler(api, etcd))

	line, err := json.Marshal(ready{
		Server:     server,
		Kubeconfig: kubeconfig,
		Etcd:       etcdURL,
		Control:    "http://" + control.Addr().String(),
		Dir:        dir,
		Log:        logPath,
	})
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	fmt.Fprintf(os.Stderr, "kube-apiserver ready at %s\n  kubeconfig: %s\n  log: %s\n", server, kubeconfig, logPath)

	done := make(chan string, 2)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() { done <- (<-signals).String() }()
	if *watchStdin {
		go func() {
			io.Copy(io.Discard, os.Stdin)
			done <- "end of stdin"
		}()
	}
	reason := <-done
	fmt.Fprintf(os.Stderr, "kube-apiserver harness: stopping (%s)\n", reason)
	return nil
}

func startEtcd(dir string) (*embed.Etcd, string, error) {
	var lastErr error
	// A free port can be taken between the probe and the bind; try a few times.
	for attempt := 0; attempt < 5; attempt++ {
		clientPort, err := freePort()
		if err != nil {
			return nil, "", err
		}
		peerPort, err := freePort()
		if err != nil {
			return nil, "", err
		}
		cfg := embed.NewConfig()
		cfg.Name = "informer-tests"
		cfg.Dir = filepath.Join(dir, fmt.Sprintf("etcd-%d", attempt))
		cfg.LogLevel = "error"
		cfg.LogOutputs = []string{filepath.Join(dir, "etcd.log")}
		// Test data: durability across a power cut is not worth an fsync per write.
		cfg.UnsafeNoFsync = true
		clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
		peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
		cfg.ListenClientUrls = []url.URL{clientURL}
		cfg.AdvertiseClientUrls = []url.URL{clientURL}
		cfg.ListenPeerUrls = []url.URL{peerURL}
		cfg.AdvertisePeerUrls = []url.URL{peerURL}
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			lastErr = err
			continue
		}
		select {
		case <-e.Server.ReadyNotify():
			return e, clientURL.String(), nil
		case err := <-e.Err():
			e.Close()
			lastErr = err
		case <-time.After(60 * time.Second):
			e.Close()
			return nil, "", errors.New("etcd not ready after 60s")
		}
	}
	return nil, "", lastErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// apiServer is the kube-apiserver child process: this same binary with the "apiserver" argument.
type apiServer struct {
	args   []string
	log    string
	server string
	pki    *pki

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan error // receives cmd.Wait's result once the process is reaped
}

func (a *apiServer) start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.startLocked()
}

func (a *apiServer) startLocked() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(a.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(self, append([]string{"apiserver"}, a.args...)...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Should this harness be killed outright, the API server must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := a.waitReady(exited); err != nil {
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("%w (log: %s)\n%s", err, a.log, tail(a.log, 30))
	}
	a.cmd, a.exited = cmd, exited
	return nil
}

func (a *apiServer) waitReady(exited <-chan error) error {
	client := a.pki.httpClient()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("kube-apiserver exited before it was ready: %v", err)
		default:
		}
		resp, err := client.Get(a.server + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("kube-apiserver not ready after 3 minutes")
}

func (a *apiServer) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopLocked()
}

func (a *apiServer) stopLocked() {
	if a.cmd == nil {
		return
	}
	cmd, exited := a.cmd, a.exited
	a.cmd, a.exited = nil, nil
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

func (a *apiServer) restart() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopLocked()
	return a.startLocked()
}

func controlHandler(api *apiServer, etcd *embed.Etcd) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /restart", func(w http.ResponseWriter, r *http.Request) {
		if err := api.restart(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"restarted":true}`)
	})
	mux.HandleFunc("POST /compact", func(w http.ResponseWriter, r *http.Request) {
		rev := etcd.Server.KV().Rev()
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		_, err := etcd.Server.Compact(ctx, &etcdserverpb.CompactionRequest{Revision: rev, Physical: true})
		if err != nil {
			http.Error(w, fmt.Sprintf("compacting etcd at revision %d: %v", rev, err), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"revision\":%d}\n", rev)
	})
	return mux
}

func (p *pki) httpClient() *http.Client {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(p.caCert)
	cert, _ := tls.X509KeyPair(p.clientCert, p.clientKey)
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs:      roots,
			Certificates: []tls.Certificate{cert},
		}},
	}
}

func tail(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var all []string
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1024*1024), 1024*1024)
	for scanner.Scan() {
		all = append(all, scanner.Text())
		if len(all) > lines {
			all = all[1:]
		}
	}
	return strings.Join(all, "\n")
}
