/* The offsets of user/target/layout.c from a LuaJIT source tree (lj_obj.h,
 * lj_jit.h, lj_frame.h), printed "STRUCT.FIELD N" (docs/variants.md):
 *   cc -w -I SRC/src [-DLUAJIT_DISABLE_GC64] -o ljoffsets tests/tools/ljoffsets.c
 * Not built by the Makefile: it needs a LuaJIT source tree. */
#include <stdio.h>
#include <stddef.h>
#include "lj_obj.h"
#include "lj_jit.h"
#include "lj_frame.h"
#include "lj_dispatch.h"
#include "lj_ctype.h"
#include "lj_ir.h"
#define P(s,f) printf("%-24s %zu\n", #s "." #f, offsetof(s,f))
#define S(s) printf("%-24s %zu\n", "sizeof " #s, sizeof(s))
int main(void){
 printf("GC64 %d FR2 %d\n", LJ_GC64, LJ_FR2);
 S(lua_State); S(global_State); S(GG_State); S(TValue); S(GCRef); S(MRef);
 P(GG_State,g); P(GG_State,J);
 P(global_State,allocf);P(global_State,allocd);P(global_State,vmstate);P(global_State,mainthref);
 P(global_State,cur_L);P(global_State,jit_base);P(jit_State,trace);
 P(lua_State,gct);P(lua_State,glref);P(lua_State,base);P(lua_State,stack);P(lua_State,cframe);
 P(GCfuncC,ffid);P(GCfuncL,pc);P(GCfuncC,f);S(GCproto);
 P(GCproto,sizebc);P(GCproto,chunkname);P(GCproto,firstline);P(GCproto,numline);P(GCproto,lineinfo);
 S(GCstr);P(GCstr,len);S(GCtrace);P(GCtrace,startpt);P(GCtrace,startpc);P(GCtrace,szmcode);P(GCtrace,mcode);
 P(jit_State,parent);
 printf("CFRAME_OFS_PC %d\n", CFRAME_OFS_PC);
 P(GCtrace,nsnap);P(GCtrace,nsnapmap);P(GCtrace,snap);P(GCtrace,snapmap);P(GCtrace,nins);P(GCtrace,ir);P(GCtrace,nk);
 S(SnapShot);P(SnapShot,mapofs);P(SnapShot,ref);P(SnapShot,mcofs);P(SnapShot,nent);
 S(IRIns);
 P(GCfuncL,uvptr);P(GCupval,v);
 P(global_State,registrytv);P(GCtab,node);P(GCtab,hmask);S(Node);P(Node,val);P(Node,key);
 printf("itype str %d tab %d func %d\n",(int)LJ_TSTR,(int)LJ_TTAB,(int)LJ_TFUNC);
 printf("ctype_state %zu\n", offsetof(global_State, ctype_state));
 P(global_State,gc.total);P(global_State,gc.root);P(global_State,gc.mmudata);
 P(global_State,str.tab);P(global_State,str.mask);P(global_State,tmpbuf.e);P(global_State,tmpbuf.b);
 P(global_State,gcroot);printf("GCROOT_MAX %d BASEMT %d\n",GCROOT_MAX,GCROOT_BASEMT);
 P(global_State,strempty);P(global_State,uvhead);
 P(jit_State,sizetrace);P(jit_State,irtoplim);P(jit_State,irbotlim);P(jit_State,sizesnap);P(jit_State,sizesnapmap);
 P(lua_State,env);P(lua_State,stacksize);P(lua_State,top);P(lua_State,maxstack);
 P(GCtab,metatable);P(GCtab,array);P(GCtab,asize);P(GCtab,colo);S(GCtab);
 P(GCfuncC,nupvalues);P(GCfuncC,env);P(GCfuncC,upvalue);S(GCfuncC);S(GCfuncL);P(GCfuncL,uvptr);
 P(GCupval,closed);P(GCupval,tv);P(GCupval,nextgc);S(GCupval);
 P(GCproto,sizept);P(GCproto,k);P(GCproto,sizekgc);P(GCproto,trace);P(GCproto,sizeuv);P(GCproto,uvinfo);
 P(GCudata,len);P(GCudata,env);P(GCudata,metatable);S(GCudata);
 P(GCcdata,ctypeid);S(GCcdata);S(GCcdataVar);
 P(GCtrace,link);P(GCtrace,nextroot);P(GCtrace,nextside);P(GCtrace,traceno);
 P(GCstr,sid);
 P(global_State,gc.lightudnum);P(global_State,gc.lightudseg);
 P(GCupval,next);S(CTState);P(CTState,tab);P(CTState,sizetab);P(CTState,finalizer);
 P(CTState,cb.cbid);P(CTState,cb.sizeid);S(CType);P(CType,info);P(CType,size);P(CType,name);
 printf("IRT_IS64 %u REF_TRUE %d IR_KNULL %d IR_KGC %d\n",(unsigned)IRT_IS64,(int)REF_TRUE,(int)IR_KNULL,(int)IR_KGC);
 return 0;}
