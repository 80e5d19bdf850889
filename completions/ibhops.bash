# bash completion for ibhops: subcommands, options and their files.
# Generated from the tool's options (internal/completion); do not edit.

_ibhops() {
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
	--config|--node-name-map|--output|--sim|-z)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--Ca|-C)
		COMPREPLY=($(compgen -W "$(ls /sys/class/infiniband 2>/dev/null)" -- "$cur"))
		return
		;;
	--Port|--ibsim-sockname|--lft|--limit|--m_key|--max-nodes|--max-smps|--mft|--outstanding-smps|--outstanding_smps|--retries|--sim-host|--smkey|--switch|--timeout|-P|-o|-t|-y)
		return
		;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "--Ca --Direct --Port --check-mcast --check-routes --color --config --debug --errors --fixed-timeout --help --ibsim --ibsim-sockname --json --lft --lid-reads --limit --m_key --max-nodes --max-smps --mft --node-name-map --output --outstanding-smps --outstanding_smps --retries --routed --routing-engine --sim --sim-host --sim-sm --smkey --strict --switch --timeout --trace --verbose --version -C -D -P -V -d -e -h -o -t -v -y -z" -- "$cur"))
		return
	fi
}
complete -F _ibhops ibhops
