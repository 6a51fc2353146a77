package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

// runControllerManager is Kubernetes' cmd/kube-controller-manager main: the same command, flags
// and registrations. The harness runs it with only the garbage collector, so that owner
// references are collected as a cluster collects them.
func runControllerManager(args []string) int {
	command := app.NewControllerManagerCommand()
	command.SetArgs(args)
	return cli.Run(command)
}

// startControllerManager starts kube-controller-manager as a child (this same binary with the
// "controller-manager" argument) running the garbage collector alone against kubeconfig. It
// logs to log; the returned process is the caller's to stop.
func startControllerManager(kubeconfig, log string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(self, "controller-manager",
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--controllers=garbagecollector",
		"--leader-elect=false",
		// Nothing scrapes its metrics or health; no port to collide with the tests'.
		"--secure-port=0",
		"--cert-dir="+filepath.Join(filepath.Dir(log), "controller-manager-certs"),
		"--profiling=false",
	)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Should this harness be killed outright, the controller manager must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	return cmd, nil
}
