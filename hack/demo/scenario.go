package main

// scenarioSteps act on the running environment after setup and the
// summary, to show reflux at work: none yet. --exit-after-setup skips
// them, so the CI smoke check stays a check of the setup.
//
// To add one, write a method on *demo with the step signature and append
// it here. It can use everything setup left in d: d.env (Client,
// Kubectl for a real `kubectl edit`-style change, Git.Clone to read the
// branches reflux pushed, Reconcile to force Flux), d.kustomization,
// d.policy and d.reflux. Wait for what you show with a poll, never a
// sleep; set logs to d.refluxLogs (or d.fluxLogs) so a failure explains
// itself; and print what the user should look at to d.opts.out. Keep each
// step bounded: the user is waiting for the Ctrl-C prompt.
func (d *demo) scenarioSteps() []step {
	return nil
}
