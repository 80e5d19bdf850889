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
	--baseline|--config|--load-cache|--node-name-map|--sim|--threshold-file|-z)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--Ca|-C)
		COMPREPLY=($(compgen -W "$(ls /sys/class/infiniband 2>/dev/null)" -- "$cur"))
		return
		;;
	--Port|--checks|--ibsim-sockname|--m_key|--max-nodes|--max-op-vls|--max-smps|--outstanding-smps|--outstanding_smps|--retries|--sim-host|--skip|--timeout|-P|-o|-t|-y)
		return
		;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "--Ca --Port --baseline --checks --color --config --debug --errors --fixed-timeout --help --ibsim --ibsim-sockname --json --lid-reads --load-cache --m_key --max-nodes --max-op-vls --max-smps --node-name-map --outstanding-smps --outstanding_smps --retries --routing-engine --sim --sim-host --sim-sm --skip --strict --threshold-file --timeout --verbose --version -C -P -V -d -e -h -o -t -v -y -z" -- "$cur"))
		return
	fi
}
complete -F _ibcheck ibcheck
