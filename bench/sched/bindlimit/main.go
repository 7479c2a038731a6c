// bindlimit: the apiserver's own binding limit, for bench/sched/run. It does
// what a scheduler must do at the least and nothing else: lists the pending
// pods of one namespace once, then POSTs a Binding for each (nodes taken
// round-robin; the bench's nodes have room for every pod), with -concurrency
// Bindings in flight over one HTTP/2 connection, and with -events also one
// events.k8s.io/v1 Event per pod once it is bound, as every scheduler sends:
// Events have their own -concurrency requests in flight, so that they never
// hold a Binding back (as a scheduler's event broadcaster does not).
// With -watches 1 or 2 it also holds the pod watches a scheduler holds
// while it binds, reading and dropping what they send: 1, one watch on every
// non-terminal pod (kube-scheduler's); 2, topogang's two (its pending pods,
// and every bound non-terminal pod), so that the apiserver's cost of either
// shape is measured on its own. Standard library only. Exit 1 when any request failed (counted, named).
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type list struct {
	Items []struct {
		Metadata struct {
			Name, Namespace, UID string
		}
		Spec struct {
			NodeName string
		}
	}
	Metadata struct{ Continue, ResourceVersion string }
}

func main() {
	server := flag.String("server", "", "API server URL")
	token := flag.String("token", "", "bearer token")
	caFile := flag.String("ca", "", "CA bundle of the API server")
	ns := flag.String("namespace", "", "namespace of the pending pods")
	conc := flag.Int("concurrency", 64, "requests in flight")
	events := flag.Bool("events", false, "one Event per pod after its Binding")
	watches := flag.Int("watches", 0, "pod watches held while binding: 0, 1 (one, every non-terminal pod) or 2 (pending, bound)")
	flag.Parse()
	ca, err := os.ReadFile(*caFile)
	if err != nil {
		fail(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true,
		MaxIdleConnsPerHost: *conc}
	c := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	do := func(method, path string, body []byte) ([]byte, string, error) {
		req, _ := http.NewRequest(method, *server+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+*token)
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			return out, resp.Proto, fmt.Errorf("%s %s: HTTP %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(out)))
		}
		return out, resp.Proto, nil
	}
	get := func(path string) list {
		var l list
		out, _, err := do("GET", path, nil)
		if err == nil {
			err = json.Unmarshal(out, &l)
		}
		if err != nil {
			fail(err)
		}
		return l
	}
	nodes := get("/api/v1/nodes")
	pods := get("/api/v1/namespaces/" + *ns + "/pods?fieldSelector=spec.nodeName%3D")
	if len(nodes.Items) == 0 || len(pods.Items) == 0 {
		fail(fmt.Errorf("%d nodes, %d pending pods in %s: nothing to bind", len(nodes.Items), len(pods.Items), *ns))
	}
	var sels []string
	switch *watches {
	case 0:
	case 1:
		sels = []string{"status.phase!=Succeeded,status.phase!=Failed"}
	case 2:
		sels = []string{"spec.schedulerName=bench-limit,spec.nodeName=",
			"spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"}
	default:
		fail(fmt.Errorf("-watches %d: 0, 1 or 2", *watches))
	}
	wc := &http.Client{Transport: tr} // no timeout: a watch lasts
	for _, sel := range sels {
		var l list
		out, _, err := do("GET", "/api/v1/pods?fieldSelector="+url.QueryEscape(sel), nil)
		if err == nil {
			err = json.Unmarshal(out, &l)
		}
		if err != nil {
			fail(err)
		}
		rv := l.Metadata.ResourceVersion
		req, _ := http.NewRequest("GET", *server+"/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion="+rv+
			"&fieldSelector="+url.QueryEscape(sel), nil)
		req.Header.Set("Authorization", "Bearer "+*token)
		req.Header.Set("Accept", "application/json")
		resp, err := wc.Do(req)
		if err != nil || resp.StatusCode != 200 {
			fail(fmt.Errorf("watch %s: %v", sel, err))
		}
		go func() { // read and decode as a client would, then drop
			d := json.NewDecoder(resp.Body)
			for {
				var ev struct{ Type string }
				if d.Decode(&ev) != nil {
					return
				}
			}
		}()
	}
	type job struct{ pod, uid, node string }
	jobs := make(chan job)
	evjobs := make(chan job, len(pods.Items))
	var bound, evs, errs atomic.Int64
	var proto atomic.Value
	var firstErr sync.Once
	var wg, evwg sync.WaitGroup
	report := func(err error) {
		errs.Add(1)
		firstErr.Do(func() { fmt.Fprintln(os.Stderr, "bindlimit:", err) })
	}
	now := func() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000000Z") }
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Binding",
					"metadata": map[string]any{"name": j.pod, "uid": j.uid},
					"target":   map[string]any{"kind": "Node", "name": j.node}})
				_, p, err := do("POST", "/api/v1/namespaces/"+*ns+"/pods/"+j.pod+"/binding", b)
				if err != nil {
					report(err)
					continue
				}
				proto.Store(p)
				bound.Add(1)
				if *events {
					evjobs <- j
				}
			}
		}()
	}
	for w := 0; *events && w < *conc; w++ {
		evwg.Add(1)
		go func() {
			defer evwg.Done()
			for j := range evjobs {
				e, _ := json.Marshal(map[string]any{"apiVersion": "events.k8s.io/v1", "kind": "Event",
					"metadata":            map[string]any{"name": fmt.Sprintf("%s.%x", j.pod, time.Now().UnixNano()), "namespace": *ns},
					"eventTime":           now(),
					"reportingController": "bindlimit", "reportingInstance": "bindlimit",
					"action": "Binding", "reason": "Scheduled", "type": "Normal",
					"regarding": map[string]any{"kind": "Pod", "namespace": *ns, "name": j.pod, "uid": j.uid},
					"note":      "Successfully assigned " + *ns + "/" + j.pod + " to " + j.node})
				if _, _, err := do("POST", "/apis/events.k8s.io/v1/namespaces/"+*ns+"/events", e); err != nil {
					report(err)
					continue
				}
				evs.Add(1)
			}
		}()
	}
	for i, p := range pods.Items {
		jobs <- job{p.Metadata.Name, p.Metadata.UID, nodes.Items[i%len(nodes.Items)].Metadata.Name}
	}
	close(jobs)
	wg.Wait()
	close(evjobs)
	evwg.Wait()
	fmt.Printf("bindlimit: %d bound, %d events, %d errors, %s, %d nodes\n", bound.Load(), evs.Load(), errs.Load(),
		proto.Load(), len(nodes.Items))
	if errs.Load() > 0 {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bindlimit:", err)
	os.Exit(1)
}
