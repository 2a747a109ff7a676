// Package pullrequest is the journey of reflux's pull requests against a
// real Gitea (built by `make testbin`), real Flux controllers pulling from
// that Gitea over HTTP, and the real apiserver: a live change becomes one
// pull request, the reviewer's merge resolves its records once Flux
// applies it, and a close dismisses them and lets Flux restore Git. GitHub
// and GitLab take the same code path; their requests are pinned by the
// unit tests of reverse/writeback/forge.
package pullrequest
