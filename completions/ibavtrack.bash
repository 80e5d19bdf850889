# bash completion for ibavtrack: subcommands, options and their files.
# Generated from the tool's options (internal/completion); do not edit.

_ibavtrack() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=
	[ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}
	COMPREPLY=()
	case $prev in
	--color)
		COMPREPLY=($(compgen -W "auto always never" -- "$cur"))
		return
		;;
	--config|--load-cache|--node-name-map|--output|--sim|--threshold-file|-z)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--Ca|-C)
		COMPREPLY=($(compgen -W "$(ls /sys/class/infiniband 2>/dev/null)" -- "$cur"))
		return
		;;
	--Direct|--Port|--count|--full-interval|--hold|--ibsim-sockname|--interval|--m_key|--max-nodes|--max-op-vls|--max-smps|--mcast|--outstanding-smps|--outstanding_smps|--port-guid|--retries|--sim-host|--smkey|--src|--suppress|--timeout|-D|-G|-P|-S|-o|-s|-t|-y)
		return
		;;
	esac
	local i cmd=
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		links|path|watch|errors|mcast)
			cmd=${COMP_WORDS[i]}
			break
			;;
		esac
	done
	case $cmd in
	links)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--Ca --Port --check --color --config --counters --debug --errors --fixed-timeout --help --ibsim --ibsim-sockname --json --lid-reads --m_key --max-nodes --max-op-vls --max-smps --output --outstanding-smps --outstanding_smps --retries --sim --sim-host --sim-sm --strict --timeout --verbose --version -C -P -V -d -e -h -o -t -v -y -z" -- "$cur"))
		fi
		;;
	path)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--Ca --Port --check --color --config --debug --errors --fixed-timeout --help --ibsim --ibsim-sockname --json --lid-reads --m_key --max-nodes --max-smps --output --outstanding-smps --outstanding_smps --retries --sim --sim-host --sim-sm --strict --timeout --verbose --version -C -P -V -d -e -h -o -t -v -y -z" -- "$cur"))
		fi
		;;
	watch)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--Ca --Port --color --config --count --counters --debug --errors --fixed-timeout --full-interval --help --hold --ibsim --ibsim-sockname --interval --json --lid-reads --m_key --max-nodes --max-smps --mcast --outstanding-smps --outstanding_smps --retries --sim --sim-host --sim-sm --src --strict --timeout --verbose --version -C -P -V -d -e -h -o -t -v -y -z" -- "$cur"))
		fi
		;;
	errors)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--Ca --Direct --GNDN --Port --ca --check --clear-counts --clear-errors --color --config --counters --data --debug --details --errors --fixed-timeout --help --ibsim --ibsim-sockname --json --lid-reads --load-cache --m_key --max-nodes --max-smps --node-name-map --output --outstanding-smps --outstanding_smps --port-guid --report-port --retries --router --sim --sim-host --sim-sm --skip-sl --strict --suppress --suppress-common --switch --threshold-file --timeout --verbose --version -C -D -G -K -P -R -S -V -c -d -e -h -k -o -r -s -t -v -y -z" -- "$cur"))
		fi
		;;
	mcast)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--Ca --Port --color --config --debug --errors --fixed-timeout --help --ibsim --ibsim-sockname --json --lid-reads --m_key --max-nodes --max-smps --members --output --outstanding-smps --outstanding_smps --retries --sim --sim-host --sim-sm --smkey --strict --timeout --verbose --version -C -P -V -d -e -h -o -t -v -y -z" -- "$cur"))
		fi
		;;
	*)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--Ca --Port --color --config --debug --errors --fixed-timeout --help --ibsim --ibsim-sockname --json --lid-reads --m_key --max-nodes --max-smps --outstanding-smps --outstanding_smps --retries --sim --sim-host --sim-sm --strict --timeout --verbose --version -C -P -V -d -e -h -o -t -v -y -z" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "links path watch errors mcast" -- "$cur"))
		fi
		;;
	esac
}
complete -F _ibavtrack ibavtrack
