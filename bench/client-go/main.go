// Command peer-client-go is client-go as a benchmark peer for `cargo xtask bench`: a
// SharedInformerFactory with its pod informer, counting handlers and its lister (or, with
// --metadata-only, client-go's metadata informer factory), with client-go's defaults. It speaks
// the peer protocol of the informer-bench crate (bench/src/lib.rs): flags in, JSON lines out.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

const peer = "client-go"

type args struct {
	server, scenario, transform, marker, namespace, selector string
	objects, events, handlers, queries, settleMs, timeoutS   int
	metadataOnly, view                                       bool
	// scale: see scale.go.
	caFile, watch, get string
	namespaces         int
}

func parseArgs() args {
	var a args
	flag.StringVar(&a.server, "server", "", "API server URL")
	flag.StringVar(&a.scenario, "scenario", "", "sync|churn|relist|lister")
	flag.IntVar(&a.objects, "objects", 0, "pods on the server")
	flag.IntVar(&a.events, "events", 0, "churn: modifications to wait for")
	flag.IntVar(&a.handlers, "handlers", 1, "event handlers")
	flag.StringVar(&a.transform, "transform", "", "strip-managed-fields")
	flag.BoolVar(&a.metadataOnly, "metadata-only", false, "use the metadata informer")
	flag.BoolVar(&a.view, "view", false, "cache a view of each pod (not possible with client-go)")
	flag.StringVar(&a.marker, "marker", "bench-marker", "relist: the marker pod")
	flag.StringVar(&a.namespace, "namespace", "ns-000", "lister: namespace")
	flag.StringVar(&a.selector, "selector", "app=app-00", "lister: label selector")
	flag.IntVar(&a.queries, "queries", 100, "lister: repetitions")
	flag.IntVar(&a.settleMs, "settle-ms", 1000, "wait before the steady RSS")
	flag.IntVar(&a.timeoutS, "timeout-s", 600, "longest phase")
	flag.StringVar(&a.caFile, "ca-file", "", "PEM file of the CA to trust")
	flag.StringVar(&a.watch, "watch", "namespaced", "scale: namespaced|cluster|none")
	flag.IntVar(&a.namespaces, "namespaces", 0, "scale: namespaces scale-000 ..")
	flag.StringVar(&a.get, "get", "", "scale: the config map to get, namespace/name")
	flag.Parse()
	if a.handlers < 1 {
		a.handlers = 1
	}
	if a.queries < 1 {
		a.queries = 1
	}
	return a
}

// memory reads VmRSS and VmHWM (KiB) from /proc/self/status.
func memory() (rss, peak int64, err error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := scanner.Text()
		field := func(name string) (int64, bool) {
			if !strings.HasPrefix(line, name) {
				return 0, false
			}
			v := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line[len(name):]), "kB"))
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
		if n, ok := field("VmRSS:"); ok {
			rss = n
		}
		if n, ok := field("VmHWM:"); ok {
			peak = n
		}
	}
	return rss, peak, scanner.Err()
}

func resetPeak() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func emit(fields map[string]any) {
	line, _ := json.Marshal(fields)
	fmt.Println(string(line))
}

func fail(scenario string, format string, values ...any) {
	fmt.Fprintf(os.Stderr, "%s (%s): %s\n", peer, scenario, fmt.Sprintf(format, values...))
	os.Exit(1)
}

// counter is what one handler has seen.
type counter struct {
	updates atomic.Int64
	reached chan struct{}
	once    sync.Once
}

func main() {
	klog.SetOutput(os.Stderr)
	a := parseArgs()
	if a.server == "" || a.scenario == "" {
		fail(a.scenario, "--server and --scenario are required")
	}
	if a.scenario == "scale" {
		runScale(a)
		return
	}
	if a.view {
		// Informers decode whole objects; a transform can only drop fields after the decode.
		emit(map[string]any{"phase": "unsupported", "reason": "client-go decodes whole objects (a transform runs after the decode)"})
		return
	}
	timeout := time.Duration(a.timeoutS) * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	config := &rest.Config{Host: a.server, QPS: -1}

	var transform cache.TransformFunc
	if a.transform == "strip-managed-fields" {
		transform = func(obj any) (any, error) {
			if accessor, err := meta.Accessor(obj); err == nil {
				accessor.SetManagedFields(nil)
			}
			return obj, nil
		}
	} else if a.transform != "" {
		fail(a.scenario, "unknown transform %q", a.transform)
	}

	var informer cache.SharedIndexInformer
	var listAll func(labels.Selector) int
	var listNamespace func(string) int
	var getOne func(namespace, name string) bool
	var start func()
	if a.metadataOnly {
		client, err := metadata.NewForConfig(config)
		if err != nil {
			fail(a.scenario, "metadata client for %s: %v", a.server, err)
		}
		factory := metadatainformer.NewSharedInformerFactoryWithOptions(client, 0, metadatainformer.WithTransform(transform))
		generic := factory.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
		informer = generic.Informer()
		listAll = func(s labels.Selector) int { items, _ := generic.Lister().List(s); return len(items) }
		listNamespace = func(ns string) int {
			items, _ := generic.Lister().ByNamespace(ns).List(labels.Everything())
			return len(items)
		}
		getOne = func(ns, name string) bool { _, err := generic.Lister().ByNamespace(ns).Get(name); return err == nil }
		start = func() { factory.Start(ctx.Done()) }
	} else {
		client, err := kubernetes.NewForConfig(config)
		if err != nil {
			fail(a.scenario, "client for %s: %v", a.server, err)
		}
		factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(transform))
		pods := factory.Core().V1().Pods()
		informer = pods.Informer()
		listAll = func(s labels.Selector) int { items, _ := pods.Lister().List(s); return len(items) }
		listNamespace = func(ns string) int {
			items, _ := pods.Lister().Pods(ns).List(labels.Everything())
			return len(items)
		}
		getOne = func(ns, name string) bool { _, err := pods.Lister().Pods(ns).Get(name); return err == nil }
		start = func() { factory.Start(ctx.Done()) }
	}

	var first atomic.Pointer[time.Time]
	markerSeen := make(chan struct{})
	var markerOnce sync.Once
	counters := make([]*counter, a.handlers)
	registrations := make([]cache.ResourceEventHandlerRegistration, a.handlers)
	for i := range counters {
		c := &counter{reached: make(chan struct{})}
		counters[i] = c
		target := int64(a.events)
		handler := cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if accessor, err := meta.Accessor(obj); err == nil && accessor.GetName() == a.marker {
					markerOnce.Do(func() { close(markerSeen) })
				}
			},
			UpdateFunc: func(_, obj any) {
				now := time.Now()
				first.CompareAndSwap(nil, &now)
				if accessor, err := meta.Accessor(obj); err == nil {
					_ = accessor.GetResourceVersion()
				}
				if c.updates.Add(1) == target {
					c.once.Do(func() { close(c.reached) })
				}
			},
			DeleteFunc: func(obj any) {},
		}
		registration, err := informer.AddEventHandler(handler)
		if err != nil {
			fail(a.scenario, "add handler: %v", err)
		}
		registrations[i] = registration
	}

	began := time.Now()
	start()
	syncCtx, syncCancel := context.WithTimeout(ctx, timeout)
	waits := []cache.InformerSynced{informer.HasSynced}
	for _, r := range registrations {
		waits = append(waits, r.HasSynced)
	}
	// cache.WaitForCacheSync polls every 100 ms, which would round every sync time up; 1 ms.
	for !allSynced(waits) {
		select {
		case <-syncCtx.Done():
			fail(a.scenario, "the cache did not sync within %v", timeout)
		case <-time.After(time.Millisecond):
		}
	}
	syncCancel()
	syncTime := time.Since(began)
	_, peak, err := memory()
	if err != nil {
		fail(a.scenario, "/proc/self/status: %v", err)
	}
	cached := len(informer.GetStore().ListKeys())
	if cached != a.objects {
		fail(a.scenario, "synced with %d pods, expected %d", cached, a.objects)
	}
	out := map[string]any{
		"phase": "result", "peer": peer, "scenario": a.scenario, "objects": a.objects,
		"handlers": a.handlers, "sync_ms": float64(syncTime.Microseconds()) / 1e3,
		"cached": cached, "peak_rss_kib": peak,
	}
	settle := time.Duration(a.settleMs) * time.Millisecond
	switch a.scenario {
	case "sync":
		time.Sleep(settle)
		rss, _, _ := memory()
		out["rss_kib"] = rss
	case "churn":
		steady := settleAndResetPeak(a.scenario, settle)
		deadline := time.After(timeout)
		for i, c := range counters {
			select {
			case <-c.reached:
			case <-deadline:
				fail(a.scenario, "handler %d saw %d of %d modifications within %v", i, c.updates.Load(), a.events, timeout)
			}
		}
		out["done_unix_us"] = time.Now().UnixMicro()
		elapsed := time.Duration(0)
		if f := first.Load(); f != nil {
			elapsed = time.Since(*f)
		}
		out["events"] = a.events
		out["churn_ms"] = float64(elapsed.Microseconds()) / 1e3
		out["events_per_s"] = float64(a.events) / max(elapsed.Seconds(), 1e-9)
		out["rss_kib"] = steady
		_, peak, _ := memory()
		out["churn_peak_rss_kib"] = peak
	case "relist":
		steady := settleAndResetPeak(a.scenario, settle)
		relisted := time.Now()
		select {
		case <-markerSeen:
		case <-time.After(timeout):
			fail(a.scenario, "no relist with %s within %v", a.marker, timeout)
		}
		out["relist_ms"] = float64(time.Since(relisted).Microseconds()) / 1e3
		out["rss_kib"] = steady
		_, peak, _ := memory()
		out["relist_peak_rss_kib"] = peak
	case "lister":
		selector, err := labels.Parse(a.selector)
		if err != nil {
			fail(a.scenario, "--selector %s: %v", a.selector, err)
		}
		perQuery, hits := timeQueries(a.queries, func() int { return listNamespace(a.namespace) })
		out["namespace_query_us"], out["namespace_hits"] = perQuery, hits
		perQuery, hits = timeQueries(a.queries, func() int { return listAll(selector) })
		out["selector_query_us"], out["selector_hits"] = perQuery, hits
		perGet, found := timeGets(getOrder(informer.GetStore().ListKeys()), getOne)
		out["get_us"], out["get_hits"] = perGet, found
	default:
		fail(a.scenario, "unknown scenario")
	}
	emit(out)
}

func allSynced(waits []cache.InformerSynced) bool {
	for _, synced := range waits {
		if !synced() {
			return false
		}
	}
	return true
}

// settleAndResetPeak waits settle, resets the peak RSS and prints the synced line: the churn or
// relist that follows is measured against the steady RSS it returns, its peak from here.
func settleAndResetPeak(scenario string, settle time.Duration) int64 {
	time.Sleep(settle)
	if err := resetPeak(); err != nil {
		fail(scenario, "cannot reset the peak RSS: %v", err)
	}
	return synced()
}

// synced prints the synced line; returns the RSS now.
func synced() int64 {
	rss, peak, _ := memory()
	emit(map[string]any{"phase": "synced", "rss_kib": rss, "peak_rss_kib": peak})
	return rss
}

// getOrder is the order in which the lister scenario gets every key once, as the Rust peers'
// report::get_order: sorted, then visited with a stride that shares no factor with their number.
func getOrder(keys []string) []string {
	sort.Strings(keys)
	n := len(keys)
	if n == 0 {
		return keys
	}
	stride := 7919 % n
	for n > 1 && gcd(stride, n) != 1 {
		stride++
	}
	ordered := make([]string, n)
	for i := range n {
		ordered[i] = keys[(i*stride)%n]
	}
	return ordered
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// timeGets gets each of keys (namespace/name) through the lister: microseconds per get, and how
// many were found.
func timeGets(keys []string, get func(namespace, name string) bool) (float64, int) {
	began := time.Now()
	found := 0
	for _, key := range keys {
		namespace, name, _ := strings.Cut(key, "/")
		if get(namespace, name) {
			found++
		}
	}
	return float64(time.Since(began).Nanoseconds()) / 1e3 / float64(max(len(keys), 1)), found
}

func timeQueries(n int, query func() int) (float64, int) {
	began := time.Now()
	hits := 0
	for range n {
		hits = query()
	}
	return float64(time.Since(began).Nanoseconds()) / 1e3 / float64(n), hits
}
