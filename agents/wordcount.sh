#!/bin/sh
# wordcount.sh: a corral agent in POSIX sh, to show that any language will
# do.  No jq: it picks the few members it needs out of each line with sed,
# and prints its reply with printf.
#
# An execute request names a file in args.items[0]; the reply counts its
# lines, words and bytes with wc(1) and proposes a summarize action that
# carries the counts and the decomposer's batch, part and parts on, so a
# tally agent can gather the parts.  Confidence is 0.9, or 0.3 when the
# file holds no words (empty or unreadable): corral then asks a reviewer.
#
# Pings are answered; notices, cancel notices, messages and child results
# are never answered (docs/protocol.md).

me=${CORRAL_AGENT_ID:-wordcount}
seq=0

# Print the first capture of a sed -E substitution applied to a line.
pick() {
	printf '%s\n' "$1" | sed -nE "s/$2/\\1/p" | head -n 1
}

# Print the current time in RFC 3339, UTC.
now() {
	date -u +%Y-%m-%dT%H:%M:%SZ
}

# Answer one request: $1 the line, $2 its trace id.
answer() {
	line=$1 id=$2
	seq=$((seq + 1))
	# JSON string contents are copied raw, so their escapes stay valid.
	file=$(pick "$line" '.*"items":\["(([^"\\]|\\.)*)".*')
	batch=$(pick "$line" '.*"batch":"(([^"\\]|\\.)*)".*')
	part=$(pick "$line" '.*"part":([0-9]+).*')
	parts=$(pick "$line" '.*"parts":([0-9]+).*')
	goal=$(pick "$line" '.*"goal":"(([^"\\]|\\.)*)".*')
	head='{"protocol":"multiagent-1.0","role":"agent","agent":{"id":"'$me'","name":"Word counter","model":"sh","version":"1"},"timestamp":"'$(now)'","intent":"execute"'
	trace='"trace":{"id":"'$me-$$-$seq'"'
	# Without parents a reply answers the oldest outstanding request.
	[ -n "$id" ] && trace=$trace',"parents":["'$id'"]'
	trace=$trace'}'
	case $file in
	''|*\\*)
		printf '%s,"task":"Count words","content":{"type":"error","text":"args.items names no plain file path","data":{"code":"agent_error","category":"REJECTED","message":"args.items names no plain file path","retryable":false}},%s}\n' \
		    "$head" "$trace"
		return
		;;
	esac
	name=${file##*/}
	if [ -r "$file" ] && [ -f "$file" ]; then
		lines=$(($(wc -l <"$file")))
		words=$(($(wc -w <"$file")))
		bytes=$(($(wc -c <"$file")))
	else
		lines=0 words=0 bytes=0
	fi
	if [ "$words" -eq 0 ]; then
		conf='{"score":0.3,"rationale":"no words found","risks":["'$name' is empty or unreadable"]}'
	else
		conf='{"score":0.9,"rationale":"counted by wc(1)"}'
	fi
	counts='"file":"'$file'","words":'$words',"lines":'$lines',"bytes":'$bytes
	actions=''
	if [ -n "$batch" ] && [ -n "$part" ] && [ -n "$parts" ]; then
		actions=',"outputs":{"next_actions":[{"intent":"summarize","task":"Tally the word counts","args":{"batch":"'$batch'","part":'$part',"parts":'$parts','$counts',"goal":"'$goal'"}}]}'
	fi
	printf '%s,"task":"Count the words of %s","content":{"type":"json","text":"%s: %s words, %s lines, %s bytes","data":{%s}}%s,"confidence":%s,%s}\n' \
	    "$head" "$name" "$name" "$words" "$lines" "$bytes" "$counts" \
	    "$actions" "$conf" "$trace"
}

while IFS= read -r line || [ -n "$line" ]; do
	case $line in
	*'"jsonrpc"'*)
		case $line in
		*'"method":"ping"'*)
			rid=$(pick "$line" '.*"id":([0-9]+|"[^"]*").*')
			printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$rid"
			;;
		esac
		continue
		;;
	*'"kind":"notice"'*|*'"kind":"message"'*|*'"kind":"child_result"'*| \
	*'"kind":"cancel"'*|*'"kind":"progress"'*)
		continue
		;;
	esac
	id=$(pick "$line" '.*"trace":\{[^}]*"id":"([^"]*)".*')
	answer "$line" "$id"
done
