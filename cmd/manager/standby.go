package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reflux-dev/reflux/controllers"
	"github.com/reflux-dev/reflux/reverse/drift"
	"github.com/reflux-dev/reflux/reverse/governor"
	"github.com/reflux-dev/reflux/reverse/intake"
	"github.com/reflux-dev/reflux/reverse/standby"
	"github.com/reflux-dev/reflux/reverse/tenancy"
)

// StandbyOptions are the leader election's, as the standby needs them.
type StandbyOptions struct {
	// Lease is the leader election Lease.
	Lease         types.NamespacedName
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// addStandby adds the standby (reverse/standby) to mgr: it watches the
// governed objects of the hub with watches of its own, apart from the
// engine's, which start only once the replica leads, and hands over to
// engine and watcher once they govern what it watched.
func addStandby(mgr ctrl.Manager, opts Options, gov *governor.Governor, watcher *controllers.Watcher) error {
	so := opts.Standby
	if so.Lease.Namespace == "" {
		opts.Log.Info("no standby: RUNTIME_NAMESPACE does not name the namespace of the leader election Lease")
		return nil
	}
	holds, err := standbyHolds(opts.Registerer)
	if err != nil {
		return err
	}
	config := rest.CopyConfig(mgr.GetConfig())
	config.Timeout = 0 // watches last as long as the standby
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("creating the standby's dynamic client: %w", err)
	}
	readSecrets := opts.Secrets == "" || opts.Secrets == SecretsRead
	watches := controllers.NewWatcher(dyn, mgr.GetRESTMapper(), controllers.WatcherOptions{Namespace: opts.WatchNamespace,
		Namespaces: opts.WatchNamespaces, IgnoreSecrets: !readSecrets, OwnerOf: intake.OwnerOf, Log: opts.Log.WithName("standby-live")})
	writers, err := drift.New(mgr.GetClient(), drift.WithAllowedManagers(append(drift.DefaultAllowedManagers(), opts.AllowedManagers...)...),
		drift.WithOverrideManagers(opts.OverrideManagers...))
	if err != nil {
		return fmt.Errorf("creating the standby's writers: %w", err)
	}
	clients, err := tenancy.NewClients(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()},
		opts.ImpersonationCacheSize)
	if err != nil {
		return err
	}
	reader := mgr.GetAPIReader()
	sb, err := standby.New(standby.Options{
		Lease: func(ctx context.Context) (standby.Lease, error) { return readLease(ctx, reader, so.Lease) },
		Governed: controllers.StandbyGovernance{Client: mgr.GetClient(), DefaultServiceAccount: opts.DefaultServiceAccount,
			NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs}.Governed,
		Watches: watches,
		Writers: writers,
		HolderFor: func(identity string) (standby.Holder, error) {
			// As the engine's executor does (execute.HolderFor): "" is
			// reflux's own identity, anyone else is impersonated.
			if identity == "" {
				return controllers.Holder{Client: mgr.GetClient()}, nil
			}
			return impersonation{clients: clients}.Holder(identity)
		},
		Records:       reader,
		Elected:       mgr.Elected(),
		EngineCovers:  func(g standby.Governed) bool { return controllers.EngineCovers(gov, watcher, g) },
		RenewDeadline: so.RenewDeadline, Poll: so.RetryPeriod,
		Held: holds.Inc, Log: opts.Log.WithName("standby"),
	})
	if err != nil {
		return err
	}
	watches.Handle(sb)
	return mgr.Add(sb)
}

// readLease reads the leader election Lease.
func readLease(ctx context.Context, reader client.Reader, id types.NamespacedName) (standby.Lease, error) {
	lease := &coordinationv1.Lease{}
	if err := reader.Get(ctx, id, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return standby.Lease{}, nil
		}
		return standby.Lease{}, fmt.Errorf("reading Lease %s: %w", id, err)
	}
	out := standby.Lease{Found: true}
	if lease.Spec.HolderIdentity != nil {
		out.Holder = *lease.Spec.HolderIdentity
	}
	if lease.Spec.RenewTime != nil {
		out.Renewed = lease.Spec.RenewTime.Time
	}
	return out, nil
}

// standbyHolds is the counter of the holds the standby made, registered
// with reg when set (or the one registered before, for a second engine in
// one process).
func standbyHolds(reg prometheus.Registerer) (prometheus.Counter, error) {
	holds := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "reflux_standby_holds_total",
		Help: "Live objects this replica held while it did not lead and no replica led.",
	})
	if reg == nil {
		return holds, nil
	}
	if err := reg.Register(holds); err != nil {
		var dup prometheus.AlreadyRegisteredError
		if errors.As(err, &dup) {
			if c, ok := dup.ExistingCollector.(prometheus.Counter); ok {
				return c, nil
			}
		}
		return nil, fmt.Errorf("registering standby metrics: %w", err)
	}
	return holds, nil
}
