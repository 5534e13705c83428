"""The type of every allowed axiom, as the audit prints it (generated; see below).

``Print Assumptions`` lists each axiom as ``name : type``. The audit of
:mod:`witprobe.formal.coq_runner` compares both against this table, so that a declaration that
borrows an allowed name (``Module Classical_Prop. Axiom classic : False. End Classical_Prop.``)
is refused. The strings are what Coq 8.16 prints in the audit's context (``Set Printing All``,
libraries required, nothing imported), whitespace-normalized. ``tests/test_coq_audit.py``
re-prints every entry with the ``coqc`` at hand and compares, so a Coq that prints them otherwise
fails that test rather than passing the audit silently (the audit itself fails closed).
"""

from __future__ import annotations

# Coq.Reals' classical axioms, the primitive 63-bit integers, the primitive 64-bit floats
AXIOM_TYPES: dict[str, str] = {
    'ClassicalDedekindReals.sig_forall_dec':
        'forall (P : forall _ : nat, Prop) (_ : forall n : nat, sumbool (P n) (not (P n))), sumor (@sig nat (fun n : nat => not (P n))) (forall n : nat, P n)',
    'ClassicalDedekindReals.sig_not_dec':
        'forall P : Prop, sumbool (not (not P)) (not P)',
    'Classical_Prop.classic':
        'forall P : Prop, or P (not P)',
    'FunctionalExtensionality.functional_extensionality_dep':
        'forall (A : Type) (B : forall _ : A, Type) (f g : forall x : A, B x) (_ : forall x : A, @eq (B x) (f x) (g x)), @eq (forall x : A, B x) f g',
    'PrimInt63.int':
        'Set',
    'PrimInt63.add':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), PrimInt63.int',
    'PrimInt63.sub':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), PrimInt63.int',
    'PrimInt63.mul':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), PrimInt63.int',
    'PrimInt63.eqb':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), bool',
    'PrimInt63.ltb':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), bool',
    'PrimInt63.leb':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), bool',
    'PrimInt63.land':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), PrimInt63.int',
    'PrimInt63.lor':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), PrimInt63.int',
    'PrimInt63.lxor':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), PrimInt63.int',
    'PrimInt63.lsl':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), PrimInt63.int',
    'PrimInt63.lsr':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), PrimInt63.int',
    'PrimInt63.div':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), PrimInt63.int',
    'PrimInt63.mod':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), PrimInt63.int',
    'PrimInt63.compare':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), comparison',
    'PrimInt63.head0':
        'forall _ : PrimInt63.int, PrimInt63.int',
    'PrimInt63.tail0':
        'forall _ : PrimInt63.int, PrimInt63.int',
    'PrimInt63.addc':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), CarryType.carry PrimInt63.int',
    'PrimInt63.addcarryc':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), CarryType.carry PrimInt63.int',
    'PrimInt63.subc':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), CarryType.carry PrimInt63.int',
    'PrimInt63.subcarryc':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), CarryType.carry PrimInt63.int',
    'PrimInt63.mulc':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), prod PrimInt63.int PrimInt63.int',
    'PrimInt63.diveucl':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int), prod PrimInt63.int PrimInt63.int',
    'PrimInt63.diveucl_21':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int) (_ : PrimInt63.int), prod PrimInt63.int PrimInt63.int',
    'PrimInt63.addmuldiv':
        'forall (_ : PrimInt63.int) (_ : PrimInt63.int) (_ : PrimInt63.int), PrimInt63.int',
    'Uint63.add_spec':
        'forall x y : PrimInt63.int, @eq BinNums.Z (Uint63.to_Z (PrimInt63.add x y)) (BinInt.Z.modulo (BinInt.Z.add (Uint63.to_Z x) (Uint63.to_Z y)) Uint63.wB)',
    'Uint63.sub_spec':
        'forall x y : PrimInt63.int, @eq BinNums.Z (Uint63.to_Z (PrimInt63.sub x y)) (BinInt.Z.modulo (BinInt.Z.sub (Uint63.to_Z x) (Uint63.to_Z y)) Uint63.wB)',
    'Uint63.mul_spec':
        'forall x y : PrimInt63.int, @eq BinNums.Z (Uint63.to_Z (PrimInt63.mul x y)) (BinInt.Z.modulo (BinInt.Z.mul (Uint63.to_Z x) (Uint63.to_Z y)) Uint63.wB)',
    'Uint63.eqb_correct':
        'forall (i j : PrimInt63.int) (_ : @eq bool (PrimInt63.eqb i j) true), @eq PrimInt63.int i j',
    'Uint63.eqb_refl':
        'forall x : PrimInt63.int, @eq bool (PrimInt63.eqb x x) true',
    'Uint63.ltb_spec':
        'forall x y : PrimInt63.int, iff (@eq bool (PrimInt63.ltb x y) true) (BinInt.Z.lt (Uint63.to_Z x) (Uint63.to_Z y))',
    'Uint63.leb_spec':
        'forall x y : PrimInt63.int, iff (@eq bool (PrimInt63.leb x y) true) (BinInt.Z.le (Uint63.to_Z x) (Uint63.to_Z y))',
    'Uint63.land_spec':
        'forall x y i : PrimInt63.int, @eq bool (Uint63.bit (PrimInt63.land x y) i) (andb (Uint63.bit x i) (Uint63.bit y i))',
    'Uint63.lor_spec':
        'forall x y i : PrimInt63.int, @eq bool (Uint63.bit (PrimInt63.lor x y) i) (orb (Uint63.bit x i) (Uint63.bit y i))',
    'Uint63.lxor_spec':
        'forall x y i : PrimInt63.int, @eq bool (Uint63.bit (PrimInt63.lxor x y) i) (xorb (Uint63.bit x i) (Uint63.bit y i))',
    'Uint63.lsl_spec':
        'forall x p : PrimInt63.int, @eq BinNums.Z (Uint63.to_Z (PrimInt63.lsl x p)) (BinInt.Z.modulo (BinInt.Z.mul (Uint63.to_Z x) (BinInt.Z.pow (BinNums.Zpos (BinNums.xO BinNums.xH)) (Uint63.to_Z p))) Uint63.wB)',
    'Uint63.lsr_spec':
        'forall x p : PrimInt63.int, @eq BinNums.Z (Uint63.to_Z (PrimInt63.lsr x p)) (BinInt.Z.div (Uint63.to_Z x) (BinInt.Z.pow (BinNums.Zpos (BinNums.xO BinNums.xH)) (Uint63.to_Z p)))',
    'Uint63.div_spec':
        'forall x y : PrimInt63.int, @eq BinNums.Z (Uint63.to_Z (PrimInt63.div x y)) (BinInt.Z.div (Uint63.to_Z x) (Uint63.to_Z y))',
    'Uint63.mod_spec':
        'forall x y : PrimInt63.int, @eq BinNums.Z (Uint63.to_Z (PrimInt63.mod x y)) (BinInt.Z.modulo (Uint63.to_Z x) (Uint63.to_Z y))',
    'Uint63.compare_def_spec':
        'forall x y : PrimInt63.int, @eq comparison (PrimInt63.compare x y) (Uint63.compare_def x y)',
    'Uint63.head0_spec':
        'forall (x : PrimInt63.int) (_ : BinInt.Z.lt BinNums.Z0 (Uint63.to_Z x)), and (BinInt.Z.le (BinInt.Z.div Uint63.wB (BinNums.Zpos (BinNums.xO BinNums.xH))) (BinInt.Z.mul (BinInt.Z.pow (BinNums.Zpos (BinNums.xO BinNums.xH)) (Uint63.to_Z (PrimInt63.head0 x))) (Uint63.to_Z x))) (BinInt.Z.lt (BinInt.Z.mul (BinInt.Z.pow (BinNums.Zpos (BinNums.xO BinNums.xH)) (Uint63.to_Z (PrimInt63.head0 x))) (Uint63.to_Z x)) Uint63.wB)',
    'Uint63.tail0_spec':
        'forall (x : PrimInt63.int) (_ : BinInt.Z.lt BinNums.Z0 (Uint63.to_Z x)), @ex BinNums.Z (fun y : BinNums.Z => and (BinInt.Z.le BinNums.Z0 y) (@eq BinNums.Z (Uint63.to_Z x) (BinInt.Z.mul (BinInt.Z.add (BinInt.Z.mul (BinNums.Zpos (BinNums.xO BinNums.xH)) y) (BinNums.Zpos BinNums.xH)) (BinInt.Z.pow (BinNums.Zpos (BinNums.xO BinNums.xH)) (Uint63.to_Z (PrimInt63.tail0 x))))))',
    'Uint63.addc_def_spec':
        'forall x y : PrimInt63.int, @eq (CarryType.carry PrimInt63.int) (PrimInt63.addc x y) (Uint63.addc_def x y)',
    'Uint63.addcarryc_def_spec':
        'forall x y : PrimInt63.int, @eq (CarryType.carry PrimInt63.int) (PrimInt63.addcarryc x y) (Uint63.addcarryc_def x y)',
    'Uint63.subc_def_spec':
        'forall x y : PrimInt63.int, @eq (CarryType.carry PrimInt63.int) (PrimInt63.subc x y) (Uint63.subc_def x y)',
    'Uint63.subcarryc_def_spec':
        'forall x y : PrimInt63.int, @eq (CarryType.carry PrimInt63.int) (PrimInt63.subcarryc x y) (Uint63.subcarryc_def x y)',
    'Uint63.mulc_spec':
        'forall x y : PrimInt63.int, @eq BinNums.Z (BinInt.Z.mul (Uint63.to_Z x) (Uint63.to_Z y)) (BinInt.Z.add (BinInt.Z.mul (Uint63.to_Z (@fst PrimInt63.int PrimInt63.int (PrimInt63.mulc x y))) Uint63.wB) (Uint63.to_Z (@snd PrimInt63.int PrimInt63.int (PrimInt63.mulc x y))))',
    'Uint63.diveucl_def_spec':
        'forall x y : PrimInt63.int, @eq (prod PrimInt63.int PrimInt63.int) (PrimInt63.diveucl x y) (Uint63.diveucl_def x y)',
    'Uint63.diveucl_21_spec':
        "forall a1 a2 b : PrimInt63.int, match PrimInt63.diveucl_21 a1 a2 b return Prop with | pair q r => match BinInt.Z.div_eucl (BinInt.Z.add (BinInt.Z.mul (Uint63.to_Z a1) Uint63.wB) (Uint63.to_Z a2)) (Uint63.to_Z b) return Prop with | pair q' r' => forall _ : BinInt.Z.lt (Uint63.to_Z a1) (Uint63.to_Z b), and (@eq BinNums.Z (Uint63.to_Z q) q') (@eq BinNums.Z (Uint63.to_Z r) r') end end",
    'Uint63.addmuldiv_def_spec':
        'forall p x y : PrimInt63.int, @eq PrimInt63.int (PrimInt63.addmuldiv p x y) (Uint63.addmuldiv_def p x y)',
    'Uint63.of_to_Z':
        'forall x : PrimInt63.int, @eq PrimInt63.int (Uint63.of_Z (Uint63.to_Z x)) x',
    'PrimFloat.float':
        'Set',
    'PrimFloat.classify':
        'forall _ : PrimFloat.float, FloatClass.float_class',
    'PrimFloat.abs':
        'forall _ : PrimFloat.float, PrimFloat.float',
    'PrimFloat.sqrt':
        'forall _ : PrimFloat.float, PrimFloat.float',
    'PrimFloat.opp':
        'forall _ : PrimFloat.float, PrimFloat.float',
    'PrimFloat.eqb':
        'forall (_ : PrimFloat.float) (_ : PrimFloat.float), bool',
    'PrimFloat.ltb':
        'forall (_ : PrimFloat.float) (_ : PrimFloat.float), bool',
    'PrimFloat.leb':
        'forall (_ : PrimFloat.float) (_ : PrimFloat.float), bool',
    'PrimFloat.compare':
        'forall (_ : PrimFloat.float) (_ : PrimFloat.float), PrimFloat.float_comparison',
    'PrimFloat.Leibniz.eqb':
        'forall (_ : PrimFloat.float) (_ : PrimFloat.float), bool',
    'PrimFloat.mul':
        'forall (_ : PrimFloat.float) (_ : PrimFloat.float), PrimFloat.float',
    'PrimFloat.add':
        'forall (_ : PrimFloat.float) (_ : PrimFloat.float), PrimFloat.float',
    'PrimFloat.sub':
        'forall (_ : PrimFloat.float) (_ : PrimFloat.float), PrimFloat.float',
    'PrimFloat.div':
        'forall (_ : PrimFloat.float) (_ : PrimFloat.float), PrimFloat.float',
    'PrimFloat.of_uint63':
        'forall _ : PrimInt63.int, PrimFloat.float',
    'PrimFloat.normfr_mantissa':
        'forall _ : PrimFloat.float, PrimInt63.int',
    'PrimFloat.frshiftexp':
        'forall _ : PrimFloat.float, prod PrimFloat.float PrimInt63.int',
    'PrimFloat.ldshiftexp':
        'forall (_ : PrimFloat.float) (_ : PrimInt63.int), PrimFloat.float',
    'PrimFloat.next_up':
        'forall _ : PrimFloat.float, PrimFloat.float',
    'PrimFloat.next_down':
        'forall _ : PrimFloat.float, PrimFloat.float',
    'FloatAxioms.Prim2SF_valid':
        'forall x : PrimFloat.float, @eq bool (SpecFloat.valid_binary FloatOps.prec FloatOps.emax (FloatOps.Prim2SF x)) true',
    'FloatAxioms.SF2Prim_Prim2SF':
        'forall x : PrimFloat.float, @eq PrimFloat.float (FloatOps.SF2Prim (FloatOps.Prim2SF x)) x',
    'FloatAxioms.Prim2SF_SF2Prim':
        'forall (x : SpecFloat.spec_float) (_ : @eq bool (SpecFloat.valid_binary FloatOps.prec FloatOps.emax x) true), @eq SpecFloat.spec_float (FloatOps.Prim2SF (FloatOps.SF2Prim x)) x',
    'FloatAxioms.opp_spec':
        'forall x : PrimFloat.float, @eq SpecFloat.spec_float (FloatOps.Prim2SF (PrimFloat.opp x)) (SpecFloat.SFopp (FloatOps.Prim2SF x))',
    'FloatAxioms.abs_spec':
        'forall x : PrimFloat.float, @eq SpecFloat.spec_float (FloatOps.Prim2SF (PrimFloat.abs x)) (SpecFloat.SFabs (FloatOps.Prim2SF x))',
    'FloatAxioms.eqb_spec':
        'forall x y : PrimFloat.float, @eq bool (PrimFloat.eqb x y) (SpecFloat.SFeqb (FloatOps.Prim2SF x) (FloatOps.Prim2SF y))',
    'FloatAxioms.ltb_spec':
        'forall x y : PrimFloat.float, @eq bool (PrimFloat.ltb x y) (SpecFloat.SFltb (FloatOps.Prim2SF x) (FloatOps.Prim2SF y))',
    'FloatAxioms.leb_spec':
        'forall x y : PrimFloat.float, @eq bool (PrimFloat.leb x y) (SpecFloat.SFleb (FloatOps.Prim2SF x) (FloatOps.Prim2SF y))',
    'FloatAxioms.compare_spec':
        'forall x y : PrimFloat.float, @eq PrimFloat.float_comparison (PrimFloat.compare x y) (FloatAxioms.flatten_cmp_opt (SpecFloat.SFcompare (FloatOps.Prim2SF x) (FloatOps.Prim2SF y)))',
    'FloatAxioms.Leibniz.eqb_spec':
        'forall x y : PrimFloat.float, iff (@eq bool (PrimFloat.Leibniz.eqb x y) true) (@eq PrimFloat.float x y)',
    'FloatAxioms.classify_spec':
        'forall x : PrimFloat.float, @eq FloatClass.float_class (PrimFloat.classify x) (FloatAxioms.SF64classify (FloatOps.Prim2SF x))',
    'FloatAxioms.mul_spec':
        'forall x y : PrimFloat.float, @eq SpecFloat.spec_float (FloatOps.Prim2SF (PrimFloat.mul x y)) (FloatAxioms.SF64mul (FloatOps.Prim2SF x) (FloatOps.Prim2SF y))',
    'FloatAxioms.add_spec':
        'forall x y : PrimFloat.float, @eq SpecFloat.spec_float (FloatOps.Prim2SF (PrimFloat.add x y)) (FloatAxioms.SF64add (FloatOps.Prim2SF x) (FloatOps.Prim2SF y))',
    'FloatAxioms.sub_spec':
        'forall x y : PrimFloat.float, @eq SpecFloat.spec_float (FloatOps.Prim2SF (PrimFloat.sub x y)) (FloatAxioms.SF64sub (FloatOps.Prim2SF x) (FloatOps.Prim2SF y))',
    'FloatAxioms.div_spec':
        'forall x y : PrimFloat.float, @eq SpecFloat.spec_float (FloatOps.Prim2SF (PrimFloat.div x y)) (FloatAxioms.SF64div (FloatOps.Prim2SF x) (FloatOps.Prim2SF y))',
    'FloatAxioms.sqrt_spec':
        'forall x : PrimFloat.float, @eq SpecFloat.spec_float (FloatOps.Prim2SF (PrimFloat.sqrt x)) (FloatAxioms.SF64sqrt (FloatOps.Prim2SF x))',
    'FloatAxioms.of_uint63_spec':
        'forall n : PrimInt63.int, @eq SpecFloat.spec_float (FloatOps.Prim2SF (PrimFloat.of_uint63 n)) (SpecFloat.binary_normalize FloatOps.prec FloatOps.emax (Uint63.to_Z n) BinNums.Z0 false)',
    'FloatAxioms.normfr_mantissa_spec':
        'forall f : PrimFloat.float, @eq BinNums.Z (Uint63.to_Z (PrimFloat.normfr_mantissa f)) (BinInt.Z.of_N (SpecFloat.SFnormfr_mantissa FloatOps.prec (FloatOps.Prim2SF f)))',
    'FloatAxioms.frshiftexp_spec':
        'forall f : PrimFloat.float, match PrimFloat.frshiftexp f return Prop with | pair m e => @eq (prod SpecFloat.spec_float BinNums.Z) (@pair SpecFloat.spec_float BinNums.Z (FloatOps.Prim2SF m) (BinInt.Z.sub (Uint63.to_Z e) FloatOps.shift)) (SpecFloat.SFfrexp FloatOps.prec FloatOps.emax (FloatOps.Prim2SF f)) end',
    'FloatAxioms.ldshiftexp_spec':
        'forall (f : PrimFloat.float) (e : PrimInt63.int), @eq SpecFloat.spec_float (FloatOps.Prim2SF (PrimFloat.ldshiftexp f e)) (SpecFloat.SFldexp FloatOps.prec FloatOps.emax (FloatOps.Prim2SF f) (BinInt.Z.sub (Uint63.to_Z e) FloatOps.shift))',
    'FloatAxioms.next_up_spec':
        'forall x : PrimFloat.float, @eq SpecFloat.spec_float (FloatOps.Prim2SF (PrimFloat.next_up x)) (FloatAxioms.SF64succ (FloatOps.Prim2SF x))',
    'FloatAxioms.next_down_spec':
        'forall x : PrimFloat.float, @eq SpecFloat.spec_float (FloatOps.Prim2SF (PrimFloat.next_down x)) (FloatAxioms.SF64pred (FloatOps.Prim2SF x))',
}
