// Package controllers holds reflux's reconcilers. They are thin: they read
// cluster state, call the libraries in kustomize/ and reverse/, and write
// status, events and metrics in Flux's conventions.
package controllers
