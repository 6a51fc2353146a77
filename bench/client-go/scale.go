package main

// The scale scenario (bench/src/scale.rs): one clientset, a watch per kind and namespace over
// TLS and HTTP/2, as a client-go program watching many namespaces does it: a
// SharedInformerFactory WithNamespace per namespace, every factory on the same clientset
// (one HTTP client, one transport). --watch cluster: one factory for all namespaces;
// --watch none: the clientset alone.

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

func runScale(a args) {
	timeout := time.Duration(a.timeoutS) * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	getNamespace, getName, ok := strings.Cut(a.get, "/")
	if !ok {
		fail(a.scenario, "--get %q: expected namespace/name", a.get)
	}
	// No client-side rate limit, as in the other scenarios: 2,000 lists at client-go's default
	// 5 QPS would take 400 s.
	config := &rest.Config{Host: a.server, QPS: -1, TLSClientConfig: rest.TLSClientConfig{CAFile: a.caFile}}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fail(a.scenario, "client for %s: %v", a.server, err)
	}

	var factories []informers.SharedInformerFactory
	switch a.watch {
	case "namespaced":
		for n := range a.namespaces {
			ns := fmt.Sprintf("scale-%03d", n)
			factories = append(factories, informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns)))
		}
	case "cluster":
		factories = append(factories, informers.NewSharedInformerFactory(client, 0))
	case "none":
	default:
		fail(a.scenario, "unknown --watch %q", a.watch)
	}
	var waits []cache.InformerSynced
	var stores []cache.Store
	for _, f := range factories {
		for _, informer := range []cache.SharedIndexInformer{
			f.Core().V1().Pods().Informer(),
			f.Core().V1().ConfigMaps().Informer(),
			f.Core().V1().Secrets().Informer(),
			f.Core().V1().Services().Informer(),
		} {
			waits = append(waits, informer.HasSynced)
			stores = append(stores, informer.GetStore())
		}
	}

	began := time.Now()
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, timeout)
	for !allSynced(waits) {
		select {
		case <-syncCtx.Done():
			fail(a.scenario, "the caches did not sync within %v", timeout)
		case <-time.After(time.Millisecond):
		}
	}
	syncCancel()
	syncTime := time.Since(began)
	cached := 0
	for _, s := range stores {
		cached += len(s.ListKeys())
	}
	if cached != a.objects {
		fail(a.scenario, "synced with %d objects, expected %d", cached, a.objects)
	}
	_, peak, err := memory()
	if err != nil {
		fail(a.scenario, "/proc/self/status: %v", err)
	}
	synced()
	time.Sleep(time.Duration(a.settleMs) * time.Millisecond)
	rss, _, _ := memory()

	latencies := make([]time.Duration, 0, a.queries)
	for range a.queries {
		getCtx, getCancel := context.WithTimeout(ctx, timeout)
		asked := time.Now()
		_, err := client.CoreV1().ConfigMaps(getNamespace).Get(getCtx, getName, metav1.GetOptions{})
		latencies = append(latencies, time.Since(asked))
		getCancel()
		if err != nil {
			fail(a.scenario, "get %s: %v", a.get, err)
		}
	}
	p50, p99 := percentiles(latencies)
	emit(map[string]any{
		"phase": "result", "peer": peer, "scenario": a.scenario, "objects": a.objects,
		"watch": a.watch, "namespaces": a.namespaces,
		"sync_ms": float64(syncTime.Microseconds()) / 1e3, "cached": cached,
		"peak_rss_kib": peak, "rss_kib": rss, "get_p50_us": p50, "get_p99_us": p99, "gets": a.queries,
	})
}

// percentiles: the median and the 99th percentile (nearest rank), in microseconds, as
// bench/src/scale.rs computes them.
func percentiles(samples []time.Duration) (float64, float64) {
	if len(samples) == 0 {
		return 0, 0
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	rank := func(p float64) float64 {
		r := int(math.Ceil(p * float64(len(samples))))
		r = min(max(r, 1), len(samples))
		return float64(samples[r-1].Nanoseconds()) / 1e3
	}
	return rank(0.5), rank(0.99)
}
