// Package common is what the lab's Go consumers share whatever their library: the command line, the log the
// process writes as a container runtime keeps it, the client's properties, and the lab's control file.
package common

import (
	"bufio"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Args checks the command line, labclient CONFIG.properties CONTROL LOG LEVEL, and returns it.
func Args() (config, control, logPath, level string) {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: labclient CONFIG.properties CONTROL LOG LEVEL")
		os.Exit(2)
	}
	return os.Args[1], os.Args[2], os.Args[3], os.Args[4]
}

// LogToStderr makes the process's stderr the file LOG, as a container runtime keeps it (a panic's trace lands
// there too), and Go's log package write to it with its standard flags.
func LogToStderr(logPath string) {
	file, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot open %s: %v\n", logPath, err)
		os.Exit(1)
	}
	if err := syscall.Dup3(int(file.Fd()), 2, 0); err != nil {
		fmt.Fprintf(os.Stderr, "cannot redirect stderr: %v\n", err)
		os.Exit(1)
	}
	log.SetOutput(os.Stderr)
}

// ReadProperties reads the client's configuration (key=value lines; a key without a value is left unset: the
// library's default).
func ReadProperties(path string) map[string]string {
	out := map[string]string{}
	file, err := os.Open(path)
	if err != nil {
		log.Fatalf("cannot read %s: %v", path, err)
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		line := scanner.Text()
		at := strings.Index(line, "=")
		if at > 0 && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			value := strings.TrimSpace(line[at+1:])
			if value != "" {
				out[strings.TrimSpace(line[:at])] = value
			}
		}
	}
	return out
}

// Topic is the topic the lab names (lab.topic), orders by default.
func Topic(config map[string]string) string {
	if topic := config["lab.topic"]; topic != "" {
		return topic
	}
	return "orders"
}

// Millis is a setting in milliseconds as a duration, and whether it is set.
func Millis(config map[string]string, key string) (time.Duration, bool) {
	value, ok := config[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(value)
	if err != nil {
		log.Fatalf("%s=%s is not a number", key, value)
	}
	return time.Duration(n) * time.Millisecond, true
}

// ControlCommand takes the lab's command from the CONTROL file, if there is one ("stall <ms>").
func ControlCommand(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	os.Remove(path)
	return strings.TrimSpace(string(data))
}

// StallIfAsked runs the lab's "stall <ms>" command: a slow downstream call in the consuming goroutine (the
// library heartbeats from its own goroutine meanwhile).
func StallIfAsked(control string) {
	if command := ControlCommand(control); strings.HasPrefix(command, "stall ") {
		ms, _ := strconv.Atoi(strings.Fields(command)[1])
		log.Printf("calling the downstream service for the current batch")
		time.Sleep(time.Duration(ms) * time.Millisecond)
		log.Printf("downstream service answered after %d ms", ms)
	}
}
