# bash completion for ibcheck: subcommands, options and their files.
# Generated from the tool's options (internal/completion); do not edit.

_ibcheck() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=
	[ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}
	COMPREPLY=()
	case $prev in
	--color)
		COMPREPLY=($(compgen -W "auto always never" -- "$cur"))
		return
		;;
	--routing-engine)
		COMPREPLY=($(compgen -W "minhop updn dnup file ftree lash dor torus-2QoS nue dfsssp sssp" -- "$cur"))
		return
		;;
	--baseline|--config|--load-cache|--node-name-map|--sim|--textfile|--threshold-file|-z)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--Ca|-C)
		COMPREPLY=($(compgen -W "$(ls /sys/class/infiniband 2>/dev/null)" -- "$cur"))
		return
		;;
	--Direct|--Port|--checks|--ibsim-sockname|--interval|--listen|--m_key|--max-nodes|--max-op-vls|--max-smps|--outstanding-smps|--outstanding_smps|--port-guid|--retries|--sim-host|--skip|--switch|--timeout|-D|-G|-P|-S|-o|-t|-y)
		return
		;;
	esac
	local i cmd=
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		links|serve)
			cmd=${COMP_WORDS[i]}
			break
			;;
		esac
	done
	case $cmd in
	links)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--Ca --Direct --Port --additional --baseline --cas-only --checks --color --config --debug --down --errors --fixed-timeout --help --ibsim --ibsim-sockname --json --lid-reads --line --load-cache --m_key --max-nodes --max-op-vls --max-smps --node-name-map --outstanding-smps --outstanding_smps --port-guid --retries --routing-engine --sim --sim-host --sim-sm --skip --strict --switch --switches-only --textfile --threshold-file --timeout --verbose --version -C -D -G -P -S -V -d -e -h -l -o -p -t -v -y -z" -- "$cur"))
		fi
		;;
	serve)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--Ca --Port --baseline --checks --color --config --debug --errors --fixed-timeout --help --ibsim --ibsim-sockname --interval --json --lid-reads --listen --load-cache --m_key --max-nodes --max-op-vls --max-smps --node-name-map --outstanding-smps --outstanding_smps --retries --routing-engine --sim --sim-host --sim-sm --skip --strict --textfile --threshold-file --timeout --verbose --version -C -P -V -d -e -h -o -t -v -y -z" -- "$cur"))
		fi
		;;
	*)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--Ca --Port --baseline --checks --color --config --debug --errors --fixed-timeout --help --ibsim --ibsim-sockname --json --lid-reads --load-cache --m_key --max-nodes --max-op-vls --max-smps --node-name-map --outstanding-smps --outstanding_smps --retries --routing-engine --sim --sim-host --sim-sm --skip --strict --textfile --threshold-file --timeout --verbose --version -C -P -V -d -e -h -o -t -v -y -z" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "links serve" -- "$cur"))
		fi
		;;
	esac
}
complete -F _ibcheck ibcheck
