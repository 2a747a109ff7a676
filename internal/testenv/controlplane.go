package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// controlPlane is the envtest part of the environment.
type controlPlane struct {
	env           *envtest.Environment
	etcdPath      string
	apiserverPath string
	audit         auditEndpoint
	logs          []*os.File
}

// startControlPlane starts etcd and kube-apiserver from o.KubeBinDir with
// the CRDs in crdDirs installed.
func startControlPlane(o *Options, crdDirs []string, dir string) (*controlPlane, error) {
	etcd, err := binaryPath(o.KubeBinDir, binEtcd)
	if err != nil {
		return nil, err
	}
	apiserver, err := binaryPath(o.KubeBinDir, binKubeAPIServer)
	if err != nil {
		return nil, err
	}
	cp := &controlPlane{etcdPath: etcd, apiserverPath: apiserver, env: &envtest.Environment{
		BinaryAssetsDirectory:    o.KubeBinDir,
		CRDDirectoryPaths:        crdDirs,
		ErrorIfCRDPathMissing:    true,
		Scheme:                   o.Scheme,
		ControlPlaneStartTimeout: o.StartTimeout,
		ControlPlaneStopTimeout:  o.StopGrace,
	}}
	// Paths are set explicitly so a stray KUBEBUILDER_ASSETS cannot swap in
	// binaries of another Kubernetes version.
	api := cp.env.ControlPlane.GetAPIServer()
	api.Path = apiserver
	// A certificate directory of our own, not envtest's temporary one:
	// envtest removes its own at every Stop, and with it the serving and
	// service-account keys, so a restarted apiserver (RestartAPIServer)
	// would reject every client and token issued before.
	api.CertDir = filepath.Join(dir, binKubeAPIServer+"-certs")
	if err := os.MkdirAll(api.CertDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating kube-apiserver's certificate directory: %w", err)
	}
	cp.env.ControlPlane.Etcd = &envtest.Etcd{Path: etcd}
	if err := cp.attachLogs(dir); err != nil {
		return nil, err
	}
	if o.AuditWebhook != nil {
		cp.audit, err = configureAudit(api, dir, *o.AuditWebhook)
		if err != nil {
			return nil, cp.closeLogs(err)
		}
	}
	if _, err := cp.env.Start(); err != nil {
		return nil, cp.closeLogs(errors.Join(fmt.Errorf("starting etcd and kube-apiserver: %w", err), cp.closeAudit()))
	}
	return cp, nil
}

// attachLogs sends etcd's and kube-apiserver's output to files, so a failed
// test can show why the apiserver refused a request.
func (cp *controlPlane) attachLogs(dir string) error {
	etcdLog, err := os.Create(filepath.Join(dir, binEtcd+".log"))
	if err != nil {
		return fmt.Errorf("creating etcd log: %w", err)
	}
	apiLog, err := os.Create(filepath.Join(dir, binKubeAPIServer+".log"))
	if err != nil {
		return cp.closeLogs(fmt.Errorf("creating kube-apiserver log: %w", err))
	}
	cp.logs = []*os.File{etcdLog, apiLog}
	cp.env.ControlPlane.Etcd.Out, cp.env.ControlPlane.Etcd.Err = etcdLog, etcdLog
	api := cp.env.ControlPlane.GetAPIServer()
	api.Out, api.Err = apiLog, apiLog
	return nil
}

// closeLogs closes the log files and joins any close error to err.
func (cp *controlPlane) closeLogs(err error) error {
	errs := []error{err}
	for _, f := range cp.logs {
		if cerr := f.Close(); cerr != nil {
			errs = append(errs, fmt.Errorf("closing %s: %w", f.Name(), cerr))
		}
	}
	cp.logs = nil
	return errors.Join(errs...)
}

// kubeconfig provisions a client-certificate user in groups and writes a
// kubeconfig for it to path. Flux controllers get their own users so audit
// events name them the way a real cluster's service accounts would.
func (cp *controlPlane) kubeconfig(path, user string, groups ...string) (*rest.Config, error) {
	u, err := cp.env.AddUser(envtest.User{Name: user, Groups: groups}, &rest.Config{QPS: 200, Burst: 400})
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", user, err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("rendering kubeconfig of %s: %w", user, err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("writing kubeconfig of %s: %w", user, err)
	}
	return u.Config(), nil
}

// stop stops kube-apiserver and etcd and closes their logs.
func (cp *controlPlane) stop() error {
	var err error
	if serr := cp.env.Stop(); serr != nil {
		err = fmt.Errorf("stopping etcd and kube-apiserver: %w", serr)
	}
	return cp.closeLogs(errors.Join(err, cp.closeAudit()))
}

// closeAudit lets go of the audit webhook's address, if the environment
// held it.
func (cp *controlPlane) closeAudit() error {
	if cp.audit.front == nil {
		return nil
	}
	return cp.audit.front.close()
}
