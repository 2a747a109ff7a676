// Package signing builds commit signers from the data of a Kubernetes
// Secret.
//
// OpenPGP keys use the format of Flux's image-automation-controller: an
// ASCII-armored private key ring under "git.asc" and an optional
// "passphrase". SSH keys (git's gpg.format=ssh, SSHSIG armor) sit under
// "git.ssh" in OpenSSH or PEM form, with the same optional "passphrase".
// The signers themselves come from fluxcd/pkg/git/signature, so commits
// verify with `git verify-commit` and with Flux's own verification.
package signing
