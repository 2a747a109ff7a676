package testenv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"golang.org/x/crypto/ssh"
)

// sshFront is an SSH server in front of gittestserver's, there so that
// requests can be counted. gittestserver offers an HTTP middleware hook but
// nothing for SSH: gitkit runs the exec request in an unexported loop, and
// SSH is encrypted, so a plain TCP proxy cannot see the command either.
//
// The front presents gittestserver's own host key, accepts any client key
// (as gittestserver does), and relays every session channel to the real
// server, logging in there with the environment's identity. What the
// client sends and receives is otherwise unchanged; gitkit still runs the
// git command.
type sshFront struct {
	l        net.Listener
	server   *ssh.ServerConfig
	client   *ssh.ClientConfig
	backend  string
	onExec   func(command string)
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	stopping bool
}

// startSSHFront listens on a loopback port and relays to backend.
func startSSHFront(backend string, hostKey, identity ssh.Signer, onExec func(string)) (*sshFront, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the SSH front: %w", err)
	}
	f := &sshFront{
		l:       l,
		backend: backend,
		onExec:  onExec,
		conns:   map[net.Conn]struct{}{},
		server: &ssh.ServerConfig{
			PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { return nil, nil },
		},
		client: &ssh.ClientConfig{
			Auth:            []ssh.AuthMethod{ssh.PublicKeys(identity)},
			HostKeyCallback: ssh.FixedHostKey(hostKey.PublicKey()),
		},
	}
	f.server.AddHostKey(hostKey)
	f.wg.Go(f.serve)
	return f, nil
}

// Addr is the front's host:port.
func (f *sshFront) Addr() string {
	return f.l.Addr().String()
}

// Close stops accepting, drops every open connection and waits for the
// relay goroutines to end.
func (f *sshFront) Close() error {
	f.mu.Lock()
	f.stopping = true
	for c := range f.conns {
		_ = c.Close() // dropping; the relay reports nothing further
	}
	f.mu.Unlock()
	err := f.l.Close()
	f.wg.Wait()
	return err
}

// track registers c to be closed by Close, or refuses it when Close has
// begun.
func (f *sshFront) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *sshFront) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	_ = c.Close() // the relay is over either way
}

func (f *sshFront) serve() {
	for {
		c, err := f.l.Accept()
		if err != nil {
			return // closed by Close
		}
		if !f.track(c) {
			_ = c.Close()
			return
		}
		f.wg.Go(func() {
			defer f.untrack(c)
			f.relay(c)
		})
	}
}

// relay completes the client's handshake, opens a connection of its own to
// the backend and relays channels until either side hangs up. Failures end
// the client's connection, which is all a client would see of them.
func (f *sshFront) relay(c net.Conn) {
	sc, chans, reqs, err := ssh.NewServerConn(c, f.server)
	if err != nil {
		return
	}
	f.wg.Go(func() { ssh.DiscardRequests(reqs) })
	bc, err := net.Dial("tcp", f.backend)
	if err != nil {
		return
	}
	if !f.track(bc) {
		_ = bc.Close()
		return
	}
	defer f.untrack(bc)
	cfg := *f.client
	cfg.User = sc.User()
	cc, bchans, breqs, err := ssh.NewClientConn(bc, f.backend, &cfg)
	if err != nil {
		return
	}
	backend := ssh.NewClient(cc, bchans, breqs)
	defer backend.Close() //nolint:errcheck // the raw conn is closed by untrack too
	// A backend that hangs up takes the client's connection with it, as a
	// direct connection would.
	f.wg.Go(func() {
		_ = backend.Wait()
		_ = sc.Close()
	})
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "unknown channel type")
			continue
		}
		f.wg.Go(func() { f.relayChannel(nc, backend) })
	}
}

// relayChannel relays one session: requests both ways, stdin, stdout and
// stderr.
func (f *sshFront) relayChannel(nc ssh.NewChannel, backend *ssh.Client) {
	bch, breqs, err := backend.OpenChannel(nc.ChannelType(), nc.ExtraData())
	if err != nil {
		var open *ssh.OpenChannelError
		if errors.As(err, &open) {
			_ = nc.Reject(open.Reason, open.Message)
		} else {
			_ = nc.Reject(ssh.ConnectionFailed, err.Error())
		}
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		_ = bch.Close()
		return
	}
	var out sync.WaitGroup
	out.Go(func() { _, _ = io.Copy(ch, bch) })
	out.Go(func() { _, _ = io.Copy(ch.Stderr(), bch.Stderr()) })
	f.wg.Go(func() {
		_, _ = io.Copy(bch, ch)
		_ = bch.CloseWrite() // the client's EOF on stdin is the command's too
	})
	f.wg.Go(func() {
		f.forwardClientRequests(reqs, bch)
		// The client closed its channel: end the command's.
		_ = bch.Close()
	})
	exit := forwardBackendRequests(breqs, ch)
	// exit-status follows the last output, as gitkit sent it: the backend's
	// requests end when its channel closes, and its output may still be
	// buffered then.
	out.Wait()
	if exit != nil {
		_, _ = ch.SendRequest(exit.Type, false, exit.Payload)
	}
	_ = ch.Close()
}

// forwardClientRequests counts exec requests and passes every request on,
// with the backend's reply.
func (f *sshFront) forwardClientRequests(reqs <-chan *ssh.Request, bch ssh.Channel) {
	for req := range reqs {
		if req.Type == "exec" {
			var exec struct{ Command string }
			if ssh.Unmarshal(req.Payload, &exec) == nil {
				f.onExec(exec.Command)
			}
		}
		ok, err := bch.SendRequest(req.Type, req.WantReply, req.Payload)
		if req.WantReply {
			_ = req.Reply(ok && err == nil, nil)
		}
	}
}

// forwardBackendRequests passes the backend's requests to the client until
// the backend closes the channel, keeping back the exit status, which it
// returns.
func forwardBackendRequests(reqs <-chan *ssh.Request, ch ssh.Channel) *ssh.Request {
	var exit *ssh.Request
	for req := range reqs {
		if req.Type == "exit-status" || req.Type == "exit-signal" {
			exit = req
			continue
		}
		ok, err := ch.SendRequest(req.Type, req.WantReply, req.Payload)
		if req.WantReply {
			_ = req.Reply(ok && err == nil, nil)
		}
	}
	return exit
}
