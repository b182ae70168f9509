# The packages a gpuenv install plan (--json) installs with apt-get: in each command that runs apt-get (directly or
# through `env VAR=... apt-get`), the operands after "install", without options, the values of -o/-t, and any
# =version suffix.
def installed_operands:
  (index(["apt-get"])) as $g
  | if $g == null then empty else .[$g + 1:] | (index(["install"])) as $i
    | if $i == null then empty else
        foreach .[$i + 1:][] as $x ({skip: false, out: null};
          if .skip then {skip: false, out: null}
          elif $x == "-o" or $x == "-t" then {skip: true, out: null}
          elif ($x | startswith("-")) then {skip: false, out: null}
          else {skip: false, out: $x} end;
          .out // empty)
      end
    end;
[.steps[].commands[] | installed_operands | sub("=.*$"; "")] | unique[]
