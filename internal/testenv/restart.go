package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// RestartAPIServer stops kube-apiserver and starts it again on the same
// port, with the same certificates, flags and etcd, as a crashed or
// upgraded apiserver comes back: every client's configuration stays
// valid, but their connections drop and their watches end. It returns
// once the apiserver answers /readyz again.
func (e *Env) RestartAPIServer(ctx context.Context) error {
	if err := e.StopAPIServer(ctx); err != nil {
		return err
	}
	return e.StartAPIServer(ctx)
}

// StopAPIServer stops kube-apiserver, leaving etcd running, so a test
// can look at its clients while it is away; StartAPIServer brings it back
// as RestartAPIServer does.
func (e *Env) StopAPIServer(ctx context.Context) error {
	e.cpMu.Lock()
	defer e.cpMu.Unlock()
	api := e.cp.env.ControlPlane.GetAPIServer()
	if err := api.Stop(); err != nil {
		// envtest SIGKILLs an apiserver still draining its watches after
		// StopTimeout, and says so: then it restarts as after a crash,
		// once the port is free.
		if werr := waitPortFree(ctx, api.SecureServing.ListenAddr.HostPort(), e.opts.StopGrace); werr != nil {
			return fmt.Errorf("stopping kube-apiserver: %w", errors.Join(err, werr))
		}
	}
	return nil
}

// StartAPIServer starts the kube-apiserver StopAPIServer stopped, on the
// same port, and returns once it answers /readyz.
func (e *Env) StartAPIServer(ctx context.Context) error {
	e.cpMu.Lock()
	defer e.cpMu.Unlock()
	api := e.cp.env.ControlPlane.GetAPIServer()
	if err := api.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return fmt.Errorf("building a client for /readyz: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, e.opts.StartTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	})
}

// CompactEtcd compacts etcd's history up to its current revision, as
// kube-apiserver does every five minutes, and returns that revision. A
// watch that resumes from an older resource version afterwards (after
// RestartAPIServer, say) is answered 410 Gone, and its informer must
// list again.
func (e *Env) CompactEtcd(ctx context.Context) (int64, error) {
	base := e.cp.env.ControlPlane.Etcd.URL.String()
	// etcd's JSON gateway: a range over the empty key returns the header
	// with the store's revision.
	var head struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := etcdCall(ctx, base+"/v3/kv/range", map[string]any{"key": "AA=="}, &head); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(head.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing etcd's revision %q: %w", head.Header.Revision, err)
	}
	if err := etcdCall(ctx, base+"/v3/kv/compaction", map[string]any{"revision": rev, "physical": true}, nil); err != nil {
		return 0, err
	}
	return rev, nil
}

// waitPortFree waits until nothing listens on addr any more.
func waitPortFree(ctx context.Context, addr string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return true, nil
		}
		_ = c.Close() // only probing
		return false, nil
	})
}

// etcdCall posts in as JSON to etcd's gateway and decodes the answer into
// out, when given.
func etcdCall(ctx context.Context, url string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("calling etcd at %s: %w", url, err)
	}
	defer resp.Body.Close() //nolint:errcheck // read below
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("calling etcd at %s: %s", url, resp.Status)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decoding etcd's answer from %s: %w", url, err)
	}
	return nil
}
