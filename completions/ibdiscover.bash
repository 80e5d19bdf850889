# bash completion for ibdiscover: subcommands, options and their files.
# Generated from the tool's options (internal/completion); do not edit.

_ibdiscover() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=
	[ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}
	COMPREPLY=()
	case $prev in
	--color)
		COMPREPLY=($(compgen -W "auto always never" -- "$cur"))
		return
		;;
	--diffcheck)
		local pre=
		[[ $cur == *,* ]] && pre=${cur%,*},
		compopt -o nospace 2>/dev/null
		COMPREPLY=($(compgen -P "$pre" -W "sw ca router port lid nodedesc" -- "${cur##*,}"))
		return
		;;
	--cache|--config|--diff|--load-cache|--node-name-map|--sim|--svg|-z)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--Ca|-C)
		COMPREPLY=($(compgen -W "$(ls /sys/class/infiniband 2>/dev/null)" -- "$cur"))
		return
		;;
	--Port|--from|--hops|--ibsim-sockname|--m_key|--max-nodes|--max-smps|--outstanding-smps|--outstanding_smps|--retries|--sim-host|--slurm-hostname|--timeout|-P|-o|-t|-y)
		return
		;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "--Ca --Hca_list --Port --Router_list --Switch_list --cache --color --config --debug --diff --diffcheck --dot --errors --fixed-timeout --from --full --grouping --help --hops --ibsim --ibsim-sockname --json --lid-reads --list --load-cache --m_key --max-nodes --max-smps --max_hops --no-mlnx-epi --node-name-map --outstanding-smps --outstanding_smps --ports --retries --show --sim --sim-host --sim-sm --slurm --slurm-hostname --strict --svg --timeout --verbose --version -C -H -P -R -S -V -d -e -f -g -h -l -m -o -p -s -t -v -y -z" -- "$cur"))
		return
	fi
	compopt -o filenames 2>/dev/null
	COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _ibdiscover ibdiscover
