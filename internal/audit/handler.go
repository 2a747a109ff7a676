package audit

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-logr/logr"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// maxBody bounds one webhook batch. The apiserver's default batch is 400
// events; metadata-level events are well under 4 KiB each.
const maxBody = 8 << 20

// writeVerbs are the verbs that change an object.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "apply": true}

// Handler serves the audit webhook: the apiserver POSTs an audit.k8s.io/v1
// EventList. When Token is not empty, the hub's apiserver must send it as
// a bearer token (set it in the webhook kubeconfig). A remote cluster's
// apiserver sends a token of its own (Senders), and its events go to that
// cluster's stores only: a write in a spoke is never taken for one of the
// same name in the hub.
type Handler struct {
	Store   *Store
	Token   string
	Senders *Senders
	Log     logr.Logger
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an audit.k8s.io/v1 EventList", http.StatusMethodNotAllowed)
		return
	}
	got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	stores := h.Senders.storesOf(got)
	held := false
	if stores == nil {
		switch {
		case h.Token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(h.Token)) == 1:
			stores = []*Store{h.Store}
		case got != "" && h.Senders != nil:
			// A remote cluster reflux has not connected to yet, as far
			// as it can tell: kept for the Secret that names it.
			held = true
		default:
			// Said, not only answered: the apiserver logs a 401 where the
			// reflux operator may not look, and its events are lost.
			h.Log.Error(errors.New("unauthorized"), "rejecting audit batch: its bearer token is not --audit-token-file's",
				"remote", r.RemoteAddr)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		h.Log.Error(err, "rejecting audit batch: reading the body")
		http.Error(w, "body unreadable", http.StatusBadRequest)
		return
	}
	if len(body) > maxBody {
		// The apiserver retries a failed batch; lowering its
		// --audit-webhook-batch-max-size is the fix, so say so.
		err := fmt.Errorf("audit batch over %d bytes: lower the apiserver's --audit-webhook-batch-max-size", maxBody)
		h.Log.Error(err, "rejecting audit batch")
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	writes, err := decode(body)
	if err != nil {
		h.Log.Error(err, "rejecting audit batch")
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if held {
		h.hold(got, writes, r.RemoteAddr)
		// Accepted, not yet applied: a retry would only repeat it.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	h.record(writes, stores)
	h.Log.V(1).Info("audit batch received", "writes", len(writes))
	w.WriteHeader(http.StatusOK)
}

// hold keeps the writes of a token no store is registered for
// (Senders.hold), and says so once per token, and when writes are let go
// of unclaimed.
func (h *Handler) hold(token string, writes []keyedWrite, remote string) {
	stores, fresh, dropped := h.Senders.hold(token, writes, time.Now())
	if stores != nil {
		h.record(writes, stores)
		return
	}
	if fresh {
		h.Log.Info("audit batch with a bearer token that is neither --audit-token-file's nor the audit-token of a "+
			"connected remote cluster's kubeconfig Secret: its writes are kept for the first such Secret that names it",
			"remote", remote, "keptFor", pendingTTL.String())
	}
	if dropped.Tokens > 0 || dropped.Writes > 0 {
		h.Log.Error(errors.New("unclaimed audit events"), "dropped audit writes no kubeconfig Secret claimed: check "+
			"each remote cluster's audit-token and --audit-token-file", "tokens", dropped.Tokens, "writes", dropped.Writes,
			"maxTokens", maxPendingTokens, "maxWritesPerToken", maxPendingWrites)
	}
}

// decode returns the successful writes of an EventList.
func decode(body []byte) ([]keyedWrite, error) {
	var list auditv1.EventList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding audit EventList: %w", err)
	}
	var out []keyedWrite
	for i := range list.Items {
		if key, write, ok := toWrite(&list.Items[i]); ok {
			out = append(out, keyedWrite{key: key, write: write})
		}
	}
	return out, nil
}

// record records writes in each of stores.
func (h *Handler) record(writes []keyedWrite, stores []*Store) {
	evicted := make([]uint64, len(stores))
	for i, s := range stores {
		evicted[i] = s.Evicted()
	}
	for _, w := range writes {
		for _, s := range stores {
			s.Record(w.key, w.write)
		}
	}
	for i, s := range stores {
		if now := s.Evicted(); now > evicted[i] {
			h.Log.Info("audit store full: dropped the oldest writes before their TTL, so older changes may be attributed to no user",
				"dropped", now-evicted[i], "max", DefaultMaxWrites)
		}
	}
}

func toWrite(ev *auditv1.Event) (ObjectKey, Write, bool) {
	if ev.Stage != auditv1.StageResponseComplete || !writeVerbs[ev.Verb] || ev.ObjectRef == nil {
		return ObjectKey{}, Write{}, false
	}
	// Without a name or a completion time the write cannot be matched to a
	// change; such events are malformed or collection-wide.
	if ev.ObjectRef.Name == "" || ev.StageTimestamp.IsZero() {
		return ObjectKey{}, Write{}, false
	}
	if ev.ResponseStatus != nil && (ev.ResponseStatus.Code < 200 || ev.ResponseStatus.Code >= 300) {
		return ObjectKey{}, Write{}, false
	}
	if isDryRun(ev.RequestURI) {
		return ObjectKey{}, Write{}, false
	}
	ref := ev.ObjectRef
	// Subresource writes (scale, status) change the object too: the
	// HPA's replicas arrive as a write to deployments/scale.
	key := ObjectKey{APIGroup: ref.APIGroup, Resource: ref.Resource, Namespace: ref.Namespace, Name: ref.Name}
	user, impersonator := ev.User, ""
	if ev.ImpersonatedUser != nil {
		user, impersonator = *ev.ImpersonatedUser, ev.User.Username
	}
	return key, Write{
		User:         user.Username,
		Groups:       user.Groups,
		Impersonator: impersonator,
		FieldManager: fieldManager(ev.RequestURI),
		Verb:         ev.Verb,
		UserAgent:    ev.UserAgent,
		Time:         ev.StageTimestamp.Time,
		Received:     ev.RequestReceivedTimestamp.Time,
	}, true
}

func isDryRun(requestURI string) bool {
	u, err := url.Parse(requestURI)
	return err == nil && u.Query().Has("dryRun")
}

func fieldManager(requestURI string) string {
	u, err := url.Parse(requestURI)
	if err != nil {
		return ""
	}
	return u.Query().Get("fieldManager")
}
