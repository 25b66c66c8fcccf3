package console

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// The console's curl: `ccmlab curl` from outside the lab's VPC (only the
// load balancers' listeners are reachable; cmd/ccmlab/curl.go and
// lab/dataplane/outside), with the flags students use. Like kubectl's,
// its policy is an allowlist: each flag below, with a checked value;
// every other flag curl has is refused, and so is anything that would
// read or write a file on the host (-o but /dev/null, @file values,
// -K, -T ...).

// curlBool are the flags that take no value, by long name, with their
// one-letter forms.
var curlBool = map[string]string{
	"--silent": "s", "--show-error": "S", "--verbose": "v", "--head": "I", "--include": "i",
	"--fail": "f", "--location": "L", "--insecure": "k", "--ipv4": "4",
	"--http1.1": "", "--compressed": "", "--no-progress-meter": "",
}

// curlValued are the flags that take a value, with their one-letter
// forms ("" when curl has none).
var curlValued = map[string]string{
	"--output": "o", "--write-out": "w", "--request": "X", "--header": "H", "--data": "d",
	"--data-raw": "", "--data-binary": "", "--max-time": "m", "--user-agent": "A",
	"--resolve": "", "--connect-timeout": "", "--url": "",
}

var (
	curlMethod  = regexp.MustCompile(`^[A-Z]{1,16}$`)
	curlResolve = regexp.MustCompile(`^[A-Za-z0-9.*-]{1,253}:(\*|[0-9]{1,5}):\[?[0-9A-Fa-f.:]{2,45}\]?$`)
)

const maxCurlURLs = 3

// ParseCommand is Parse for every program the console runs: kubectl
// (Parse) and curl (checkCurl). It returns the program and its
// arguments.
func ParseCommand(line string) (program string, args []string, err error) {
	words, err := splitLine(strings.TrimSpace(line))
	if err != nil {
		return "", nil, err
	}
	if len(words) > 0 && words[0] == "curl" {
		args, err := checkCurl(words[1:])
		return "curl", args, err
	}
	args, err = Parse(line)
	return "kubectl", args, err
}

// checkCurl applies the console's curl policy to the words after "curl"
// and returns them as they go to `ccmlab curl`.
func checkCurl(args []string) ([]string, error) {
	urls := 0
	long := func(name, val string) error {
		switch name {
		case "--output":
			if val != "/dev/null" && val != "-" {
				return refuse("コンソールの curl はファイルを書きません: -o /dev/null か -o - だけが使えます (%q)。", "the console's curl writes no file: only -o /dev/null or -o - (not %q).", val)
			}
		case "--write-out", "--header", "--data", "--data-binary":
			if strings.HasPrefix(val, "@") {
				return refuse("%s の @ファイル はホストのファイルを読みます。値をそのまま書いてください。", "%s @file reads a file on the host; write the value itself.", name)
			}
		case "--request":
			if !curlMethod.MatchString(val) {
				return refuse("-X には GET や POST のようなメソッド名を書いてください (%q)。", "-X takes a method such as GET or POST (not %q).", val)
			}
		case "--max-time", "--connect-timeout":
			if f, err := strconv.ParseFloat(val, 64); err != nil || f < 0 || f > 60 {
				return refuse("%s は 0 から 60 までの秒数です (%q)。", "%s takes seconds from 0 to 60 (not %q).", name, val)
			}
		case "--resolve":
			if !curlResolve.MatchString(val) {
				return refuse("--resolve は HOST:PORT:ADDRESS の形です (%q)。", "--resolve takes HOST:PORT:ADDRESS (not %q).", val)
			}
		case "--url":
			return curlURL(val, &urls)
		}
		return nil
	}
	shortToLong := map[byte]string{}
	for l, s := range curlBool {
		if s != "" {
			shortToLong[s[0]] = l
		}
	}
	for l, s := range curlValued {
		if s != "" {
			shortToLong[s[0]] = l
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a, "=")
			if _, ok := curlBool[name]; ok {
				if hasVal {
					return nil, refuse("%s は値をとりません。", "%s takes no value.", name)
				}
				continue
			}
			if _, ok := curlValued[name]; !ok {
				return nil, refuse("curl のオプション %s はコンソールでは使えません。使えるのは -s -S -v -I -i -f -L -o /dev/null -w -H -X -d -m -A --resolve --connect-timeout です。",
					"curl option %s is not available in the console; these are: -s -S -v -I -i -f -L -o /dev/null -w -H -X -d -m -A --resolve --connect-timeout.", name)
			}
			if !hasVal {
				if i+1 >= len(args) {
					return nil, refuse("%s には値が必要です。", "%s needs a value.", name)
				}
				i++
				val = args[i]
			}
			if err := long(name, val); err != nil {
				return nil, err
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			flags := a[1:]
			for j := 0; j < len(flags); j++ {
				name, ok := shortToLong[flags[j]]
				if !ok {
					return nil, refuse("curl のオプション -%c はコンソールでは使えません。", "curl option -%c is not available in the console.", flags[j])
				}
				if _, valued := curlValued[name]; !valued {
					continue
				}
				val := flags[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						return nil, refuse("-%c には値が必要です。", "-%c needs a value.", flags[j])
					}
					i++
					val = args[i]
				}
				if err := long(name, val); err != nil {
					return nil, err
				}
				break
			}
		default:
			if err := curlURL(a, &urls); err != nil {
				return nil, err
			}
		}
	}
	if urls == 0 {
		return nil, refuse("URL を指定してください (例: curl -s http://<ロードバランサーの DNS 名>/)。", "give a URL, e.g. curl -s http://<load balancer DNS name>/.")
	}
	return args, nil
}

// curlURL checks one URL: http or https (or none, as curl assumes), a
// host and a port in range. Where it may go is ccmlab curl's rule.
func curlURL(raw string, n *int) error {
	*n++
	if *n > maxCurlURLs {
		return refuse("URL は %d 個までです。", "at most %d URLs.", maxCurlURLs)
	}
	s := raw
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return refuse("%q は http:// の URL ではありません。", "%q is not an http:// URL.", raw)
	}
	if p := u.Port(); p != "" {
		if v, err := strconv.Atoi(p); err != nil || v < 1 || v > 65535 {
			return refuse("%q のポートが正しくありません。", "%q has a bad port.", raw)
		}
	}
	return nil
}
